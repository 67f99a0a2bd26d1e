"""The optional C extensions: `_sequential` (float recurrences, grouped scans, the key
table of --by), `_csvtext` (the small-file path's loops over cells), `_numtext` (number
text to and from float64 without the GIL, on the vendored yyjson core and ffc.h) and
`_jsonl` (the JSON Lines reader's typed block parser). Each has a Python twin that runs where no
compiler was found and that the tests compare with it bit for bit; cumtool/native.py,
cumtool/numtext.py, cumtool/small.py and formats/jsonl/jsonl.py choose between them. Kept
in a package of their own, below everything: they import nothing of cumtool."""
