"""The optional C extensions: `_sequential` (float recurrences, grouped scans, the key
table of --by) and `_csvtext` (the small-file path's loops over cells). Each has a Python
twin that runs where no compiler was found and that the tests compare with it bit for
bit; cumtool/native.py and cumtool/small.py choose between them. Kept in a package of
their own, below everything: they import nothing of cumtool."""
