"""Which files a run reads, in which order: the INPUT arguments expanded.

Each argument is a file, a quoted glob (expanded here, so `'logs/2026-*.csv'` means the
same on every shell), or a directory (read recursively). The files of a glob or a
directory come in *natural order* of their paths relative to the argument: digits compare
as numbers, so `part-2` comes before `part-10`, and a folder's files come together. Names
starting with `.` or `_` (`_SUCCESS`, `.crc` files, staging folders) are skipped inside a
directory, as Spark, Hive and pyarrow do. Arguments keep the order they were given in.

Directories whose sub-folders are named `key=value` are hive-partitioned: each file's
keys (decoded as pyarrow.dataset decodes them) become text columns after the file's own.
Nothing here opens a file: it only lists them.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field

from cumtool.errors import DataError, OutputError, UsageError, option

_MAGIC = re.compile(r"[*?[]")
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class InputFile:
    """One file to read: its path as given (or as found under a directory or glob), the
    name it has relative to its argument (for `-o DIR/`), and its hive partition keys."""

    path: str
    relative: str
    partition: tuple[tuple[str, str | None], ...] = field(default=())


def natural_key(relative: str) -> tuple[tuple[object, ...], ...]:
    """Sort key: path components compared in turn, numbers in them as numbers."""
    parts = relative.replace(os.sep, "/").split("/")
    return tuple(tuple(int(t) if i % 2 else t for i, t in enumerate(_DIGITS.split(part)))
                 for part in parts)


def is_glob(argument: str) -> bool:
    """A glob pattern, unless a file of that very name exists."""
    return bool(_MAGIC.search(argument)) and not os.path.lexists(argument)


def is_dataset(inputs: tuple[str, ...]) -> bool:
    """Whether the arguments name more than one plain file (or may)."""
    if len(inputs) > 1:
        return True
    return bool(inputs) and inputs[0] != "-" and (is_glob(inputs[0]) or os.path.isdir(inputs[0]))


def expand(inputs: tuple[str, ...]) -> list[InputFile]:
    """The files the arguments name, in order; '-' is standard input."""
    files: list[InputFile] = []
    for argument in inputs:
        if argument == "-":
            files.append(InputFile("-", "-"))
        elif is_glob(argument):
            files.extend(_globbed(argument))
        elif os.path.isdir(argument):
            files.extend(_walk(argument, argument))
        elif not os.path.exists(argument):  # said before any output is written
            raise DataError(f"{argument}: no such file")
        else:
            files.append(InputFile(argument, os.path.basename(argument)))
    return files


def _globbed(pattern: str) -> list[InputFile]:
    # The folder before the first wildcard: names are relative to it (for -o DIR/).
    static = pattern[:_MAGIC.search(pattern).start()]  # type: ignore[union-attr]
    base = static if static.endswith(("/", os.sep)) else os.path.dirname(static)
    found: list[InputFile] = []
    for path in glob.glob(pattern, recursive=True):
        if os.path.isdir(path):
            found.extend(_walk(path, base or "."))
        else:
            found.append(InputFile(path, os.path.relpath(path, base or ".")))
    if not found:
        raise DataError(f"{pattern}: no file matches")
    return sorted(found, key=lambda f: natural_key(f.relative))


def _walk(directory: str, base: str) -> list[InputFile]:
    found: list[InputFile] = []
    for root, folders, names in os.walk(directory):
        folders[:] = [f for f in folders if not f.startswith((".", "_"))]
        for name in names:
            if not name.startswith((".", "_")):
                path = os.path.join(root, name)
                found.append(InputFile(path, os.path.relpath(path, base)))
    if not found:
        raise DataError(f"{directory}: the directory holds no files")
    found.sort(key=lambda f: natural_key(f.relative))
    inner = [os.path.relpath(f.path, directory) for f in found]
    if any("=" in part for f in inner for part in _folders(f)):
        found = [InputFile(f.path, f.relative, _hive_keys(directory, rel, found[0].path))
                 for f, rel in zip(found, inner, strict=True)]
    return found


def _folders(relative: str) -> list[str]:
    return as_text(relative).replace(os.sep, "/").split("/")[:-1]


def as_text(path: str) -> str:
    """A path as text that can be written (a column's cells, a hive key): a byte that is
    not UTF-8, which Python keeps as a lone surrogate, as `\\xNN`, as messages show it."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _hive_keys(directory: str, relative: str, first: str) -> tuple[tuple[str, str | None], ...]:
    """The key=value folders of a file, decoded by pyarrow's hive partitioning (percent
    escapes, `__HIVE_DEFAULT_PARTITION__` for a missing key); every file of the dataset
    must have the same keys in the same order."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    folders = _folders(relative)
    names = [part.split("=", 1)[0] for part in folders]
    if not folders or not all("=" in part for part in folders):
        raise DataError(f"{os.path.join(directory, relative)}: not in a key=value folder "
                        f"like the other files of the hive-partitioned dataset {directory}")
    partitioning = ds.HivePartitioning(pa.schema([(n, pa.string()) for n in names]))
    # pyarrow parses a path of folders between slashes (a last segment is a file name).
    try:
        keys = ds.get_partition_keys(partitioning.parse("/" + "/".join(folders) + "/"))
    except pa.ArrowInvalid as error:  # k=%E9: a percent escape of a byte that is not UTF-8
        raise DataError(f"{os.path.join(directory, relative)}: cannot read its key=value "
                        f"folders: {error}") from None
    first_names = [part.split("=", 1)[0] for part in _folders(os.path.relpath(first, directory))]
    if names != first_names:
        raise DataError(f"{os.path.join(directory, relative)}: partition keys "
                        f"{', '.join(names)} differ from {first}'s ({', '.join(first_names)})")
    return tuple((name, keys.get(name)) for name in names)


def per_input_output(output: str | None) -> bool:
    """`-o DIR/`: one output per input, under the same relative names."""
    return output is not None and output.endswith(("/", os.sep))


def check(inputs: tuple[str, ...], output: str | None, *, reverse: bool, state: str | None,
          filename_column: str | None, to_format: str | None, run_id: str | None = None,
          wait: float | None = None, growing: bool = False) -> None:
    """Usage errors of these options, before any file is opened (Request.check)."""
    for name, given in (("run_id", run_id), ("wait", wait), ("growing", growing or None)):
        if given is not None and state is None:
            raise UsageError(f"{option(name)} works with {option('state')}: it names, "
                             "waits for or continues a run that saves a state")
    if run_id is not None and not run_id.strip():
        raise UsageError(f"{option('run_id')} needs a name, e.g. {option('run_id', '2026-01-31')}")
    if wait is not None and not wait >= 0:
        raise UsageError(f"{option('wait')} must be a number of seconds, 0 or more")
    if len(inputs) > 1 and "-" in inputs:
        raise UsageError("standard input ('-') can only be the one input, not one of several")
    if growing and "-" in inputs:  # no bytes of it are there to read again next time
        raise UsageError(f"{option('growing')} continues input files that grow between "
                         "runs, and standard input is new each run: give the log's path")
    if state is not None and reverse:
        raise UsageError(f"{option('state')} cannot be used with {option('reverse')}: a "
                         "reversed scan starts from the last row, so it cannot be resumed")
    if filename_column is not None and not filename_column:
        raise UsageError(f"{option('filename_column')} needs a column name")
    if output not in (None, "-") and not per_input_output(output) and os.path.isdir(output):
        raise OutputError(f"cannot write {output}: it is a directory; end it with a slash "
                          f"(-o {output}/) to write one output per input into it")
    if (output not in (None, "-") and not per_input_output(output) and to_format is None
            and is_dataset(inputs) and not os.path.exists(output)):
        from cumtool.formats.registry import kind_from_name

        if kind_from_name(output) is None:  # a folder meant, most likely
            raise UsageError(f"cannot tell the output format from {output!r}, and there are "
                             f"several inputs: did you mean -o {output}/ (a folder, one "
                             "output per input)? Else add --to or a known extension")
    if per_input_output(output):
        if not inputs or inputs == ("-",):
            raise UsageError(f"-o {output} writes one output per input file; standard input "
                             "has no file name: give files, or -o FILE")
        if reverse:
            raise UsageError(f"{option('reverse')} cannot be used with -o {output} (one "
                             "output per input): the scan would run from the last file")
        if to_format is not None and to_format.lower() == "table":
            raise UsageError(f"-o {output} writes files; {option('to', 'table')} is for the "
                             "terminal")


def check_not_standard_output(inputs: tuple[str, ...], output: str | None) -> None:
    """The command line's input may not be the file its standard output appends to
    (`cumtool cumsum a.csv >> a.csv`): the run would read back the rows it writes. As
    `cat a >> a` says, before anything is read."""
    descriptor = 1
    if output not in (None, "-"):
        from cumtool.output import named_descriptor

        named = named_descriptor(output)  # -o /dev/stdout, /dev/fd/3: written in place
        if named is None:
            return
        descriptor = named
    import stat

    try:
        out = os.fstat(descriptor)
    except OSError:
        return
    if not stat.S_ISREG(out.st_mode):
        return
    for path in inputs:
        try:
            found = os.stat(path)
        except OSError:
            continue  # a pattern, a URL, standard input: their own checks
        if (found.st_dev, found.st_ino) == (out.st_dev, out.st_ino):
            written = "standard output" if output in (None, "-") else f"-o {output}"
            raise UsageError(f"{path} is also {written}: the run would read back "
                             "what it writes; write to another file, or use -o "
                             f"{path} to replace it")


def output_names(files: list[InputFile], directory: str, extension: str | None) -> list[str]:
    """Where each input's output goes under `directory` (`relative_outputs`, joined)."""
    return [os.path.join(directory, name)
            for name in relative_outputs(files, directory, extension)]


def relative_outputs(files: list[InputFile], directory: str, extension: str | None
                     ) -> list[str]:
    """Each input's output name under -o `directory`, for every engine: its name relative
    to its argument (`InputFile.relative`), with `extension` (".csv") in place of its own
    when --to changes the format."""
    targets: dict[str, str] = {}
    names = []
    for f in files:
        relative = f.relative
        if extension is not None:
            relative = _strip_extension(relative) + extension
        if relative in targets:
            raise UsageError(f"-o {directory} would write {relative} twice: from "
                             f"{targets[relative]} and from {f.path}")
        targets[relative] = f.path
        names.append(relative)
    return names


def _strip_extension(name: str) -> str:
    from cumtool.formats.registry import kind_from_name

    kind = kind_from_name(name)
    stem = name
    if kind is not None and kind.compression is not None:
        stem = os.path.splitext(stem)[0]
    return os.path.splitext(stem)[0] if kind is not None else stem
