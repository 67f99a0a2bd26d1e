"""Many inputs as one stream: the files of a run read one after the other, with the
carried state running across them, so several files give the bits of their concatenation.

The first file sets the schema (and, for CSV, what each column holds); every later file
must have the same columns, or the run stops with an error naming both files. A Parquet
column that is all missing may be stored as type null (pyarrow does so for an empty text
column): it takes its type from the other files. Error positions name the file and the
row within it. With `-o DIR/` each input gets its own output under its relative name;
the outputs are staged in a hidden folder and moved into place together (cumtool.staging,
as the Dask engine's) only once all succeeded.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from cumtool import inputs, runner, staging, state
from cumtool.errors import DataError, OutputError, UsageError, option
from cumtool.formats import ColumnHint, FileKind, SourceBase, holds_json_text
from cumtool.formats.csv import wide
from cumtool.formats.registry import DELIMITED, kind_from_name
from cumtool.request import Request

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from cumtool.state import Resume

_TEXT_HINT = ColumnHint(None, False, "text")


class ChainSource(SourceBase):
    """The files of a run as one table source (the engine's TableSource), opened one at a
    time. Columns: the --filename-column first, then the files' own, then hive keys."""

    def __init__(self, request: Request, dtype: np.dtype | None, files: list[inputs.InputFile],
                 stack: contextlib.ExitStack, resume: Resume | None = None) -> None:
        self._request = request
        self._dtype = dtype
        self._resume = resume
        self.files = files
        self._first, self.kind = self._open(0, stack)
        first = self._first
        self.cut_by_time = first.cut_by_time
        self.name = first.name
        self._own = first.schema
        self._hinted = first.hints is not None
        if self.kind.format == "parquet" and len(files) > 1:
            self._own = self._unified_parquet_schema(first.schema)
        self._partition = [name for name, _ in files[0].partition]
        self._filename = request.filename_column
        self._shift = 1 if self._filename is not None else 0
        import pyarrow as pa

        fields = list(self._own)
        taken = set(self._own.names)
        for name in self._partition:
            if name in taken:
                raise DataError(f"{files[0].path}: hive partition key {name!r} is also a "
                                "column of the file")
            fields.append(pa.field(name, pa.string()))
            taken.add(name)
        if self._filename is not None:
            if self._filename in taken:
                raise DataError(f"{option('filename_column', self._filename)}: the input "
                                f"already has a column {self._filename!r}")
            fields.insert(0, pa.field(self._filename, pa.string()))
        self.schema = pa.schema(fields, metadata=self._own.metadata)
        self.hints: list[ColumnHint] | None = None
        if self._hinted:
            own_hints = self._judged_hints(first)
            self.hints = ([_TEXT_HINT] * self._shift + own_hints
                          + [_TEXT_HINT] * len(self._partition))
        self._width = len(self._own)
        self.starts: list[int] = []  # the row (from 0, this run) where each file began
        # Each file's reader's own locate (row -> name, row, line), kept for messages.
        self._locators: dict[int, Any] = {}
        self._names: dict[int, str] = {}  # each file as its source names it in messages
        self.rows_read = 0
        self._as_text: set[int] = set()  # columns the file read now gives as JSON text

    @property
    def shown_name(self) -> str:
        """What was given (a folder, a glob, the files), not the first file's name."""
        given = self._request.inputs or (self._request.input,)
        if len(given) == 1:
            return given[0]
        return (" and ".join(given) if len(given) == 2
                else f"{given[0]} and {len(given) - 1:,} more")

    # Opening ---------------------------------------------------------------------------

    def _open(self, k: int, stack: contextlib.ExitStack) -> tuple[Any, FileKind]:
        from cumtool.sources import open_source

        path = self.files[k].path
        source, kind = open_source(dataclasses.replace(self._request, input=path, inputs=()),
                                   self._dtype, stack, span=state.span_of(self._resume, path))
        if source.layout == "array":
            raise UsageError(f"{path}: several inputs, directories and "
                             f"{option('filename_column')} work on tables (CSV, TSV, "
                             "Parquet), and this is an array (.npy)")
        if source.layout == "wide":  # read group by group: one file at a time only
            raise UsageError(f"{path}: {source.width:,} columns are more than "
                             f"{wide.WIDE_COLUMNS:,}; a file this wide is read on its own, not "
                             f"with other inputs or {option('filename_column')}; give one "
                             "file per run")
        return source, kind

    def _judged_hints(self, first: Any) -> list[ColumnHint]:
        """What each text column holds, judged from the first file that has a value in
        it: a first file with no rows, or with a column all missing, says nothing of it."""
        hints = list(first.hints)
        # Sources that judge no sample (other text formats) count as having rows.
        guessed = first.sampled_rows == 0  # no rows: every hint is a guess
        unknown = {i for i, hint in enumerate(hints) if guessed or hint.kind == "empty"}
        for k in range(1, len(self.files)):
            if not unknown:
                break
            with contextlib.ExitStack() as stack:
                source, kind = self._open(k, stack)
                self._check(k, source, kind)
                if source.sampled_rows == 0:
                    continue
                for i in unknown:
                    if guessed or source.hints[i].kind != "empty":
                        hints[i] = source.hints[i]
                guessed = False
                unknown = {i for i in unknown if hints[i].kind == "empty"}
        self.sampled_rows = 0 if guessed else 1  # 0: no file had a row to judge from
        return hints

    def _unified_parquet_schema(self, schema: pa.Schema) -> pa.Schema:
        """The first file's schema, with a type-null column typed as in a later file."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        nulls = [i for i, f in enumerate(schema) if pa.types.is_null(f.type)]
        for f in self.files[1:]:
            if not nulls:
                break
            try:
                other = pq.read_schema(f.path)
            except (pa.ArrowException, OSError):
                continue  # said properly when the file is opened in turn
            for i in list(nulls):
                if (i < len(other) and other.field(i).name == schema.field(i).name
                        and not pa.types.is_null(other.field(i).type)):
                    schema = schema.set(i, schema.field(i).with_type(other.field(i).type))
                    nulls.remove(i)
        return schema

    def _check(self, k: int, source: Any, kind: FileKind) -> set[int]:
        """A later file must be a table of the same format and columns as the first. The
        columns it is to give as JSON text, as the first has them (JSON Lines' of mixed
        kinds), are returned."""
        import pyarrow as pa

        first, path = self.files[0].path, self.files[k].path
        if kind.format != self.kind.format and not {kind.format, self.kind.format} <= set(
                DELIMITED):
            raise DataError(f"{path}: is {kind.format}, but {first} is {self.kind.format}; "
                            "the inputs must share a format and schema")
        theirs = source.schema
        if theirs.names != self._own.names:
            raise DataError(f"{path}: its columns differ from {first}'s "
                            f"({_difference(theirs.names, self._own.names)}); the inputs "
                            "must share a schema")
        if self._hinted:
            return set()  # text: each run converts the columns the first file says
        as_text: set[int] = set()
        for i, (mine, other) in enumerate(zip(self._own, theirs, strict=True)):
            if holds_json_text(mine):  # values of mixed kinds: any other file's as JSON text
                as_text.update(() if holds_json_text(other) else (i,))
            elif holds_json_text(other):
                raise DataError(f"{path}: column {mine.name!r} holds values of mixed kinds, "
                                f"but in {first} it is {mine.type}; the inputs must share a "
                                f"schema (give {path} first: a column of mixed kinds in the "
                                "first input takes the others' values as they are)")
            elif mine.type != other.type and not pa.types.is_null(other.type):
                raise DataError(f"{path}: column {mine.name!r} is {other.type}, but in "
                                f"{first} it is {mine.type}; the inputs must share a schema")
        return as_text

    # Reading ---------------------------------------------------------------------------

    @property
    def locator(self) -> Callable[[int], tuple[str, int] | tuple[str, int, int]]:
        return self.locate

    def locate(self, row: int) -> tuple[str, int] | tuple[str, int, int]:
        """The file and row in it (from 1) of the run's `row`-th row (from 1), and the
        line it starts on where that file's reader knows it (CSV)."""
        k = max(bisect.bisect_right(self.starts, row - 1) - 1, 0)
        within = row - (self.starts[k] if self.starts else 0)
        name = self._names.get(k, self.files[k].path)  # standard input, not '-'
        locate = self._locators.get(k)
        if locate is not None:
            found = locate(within)
            if len(found) == 3:
                return name, within, found[2]
        return name, within

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: frozenset[int] | set[int] = frozenset()) -> Iterator[pa.RecordBatch]:
        for k in range(len(self.files)):
            yield from self.file_batches(k, parse or {}, unused)

    def file_batches(self, k: int, parse: Mapping[int, pa.DataType],
                     unused: frozenset[int] | set[int]) -> Iterator[pa.RecordBatch]:
        """The batches of the k-th file, with the columns this source adds."""
        shift, width = self._shift, self._width
        own_parse = {i - shift: t for i, t in parse.items() if shift <= i < shift + width}
        own_unused = {i - shift for i in unused if shift <= i < shift + width}
        with contextlib.ExitStack() as stack:
            source = self._first
            self._as_text = set()
            if k:
                source, kind = self._open(k, stack)
                as_text = self._check(k, source, kind)
                if as_text and not source.as_json_text(as_text):
                    self._as_text = as_text
            self.starts.append(self.rows_read)
            self._locators[k] = source.locator
            self._names[k] = source.name
            for batch in source.batches(own_parse, own_unused):
                yield self._decorated(k, batch, unused)
                self.rows_read += batch.num_rows

    def _decorated(self, k: int, batch: pa.RecordBatch,
                   unused: frozenset[int] | set[int]) -> pa.RecordBatch:
        import pyarrow as pa

        n = batch.num_rows
        columns = batch.columns
        if not self._hinted and any(pa.types.is_null(c.type) and not pa.types.is_null(f.type)
                                    for c, f in zip(columns, self._own, strict=False)):
            columns = [c.cast(f.type) if pa.types.is_null(c.type) else c
                       for c, f in zip(columns, self._own, strict=True)]
        names = list(batch.schema.names)

        def constant(position: int, text: str | None) -> pa.Array:
            if self._hinted and position in unused:
                return pa.nulls(n)
            return pa.array([text] * n, pa.string())

        own = list(columns[:self._width])
        if self._as_text:
            from cumtool.formats.jsonl.jsonl import as_json_text

            own = [as_json_text(c, None) if i in self._as_text else c
                   for i, c in enumerate(own)]
        extra = list(columns[self._width:])
        own_names, extra_names = names[:self._width], names[self._width:]
        keys = self.files[k].partition
        added = [constant(self._shift + self._width + j, value)
                 for j, (_, value) in enumerate(keys)]
        arrays = own + added + extra
        labels = own_names + [name for name, _ in keys] + extra_names
        if self._filename is not None:
            arrays.insert(0, constant(0, inputs.as_text(self.files[k].path)))
            labels.insert(0, self._filename)
        return pa.RecordBatch.from_arrays(arrays, names=labels)


def _difference(theirs: list[str], mine: list[str]) -> str:
    if len(theirs) != len(mine):
        return f"{len(theirs)} column{'' if len(theirs) == 1 else 's'}, not {len(mine)}"
    at = next(i for i, (a, b) in enumerate(zip(theirs, mine, strict=True)) if a != b)
    return f"column {at + 1} is {theirs[at]!r}, not {mine[at]!r}"


# Running ---------------------------------------------------------------------------------

def run(request: Request, dtype: np.dtype | None, stack: contextlib.ExitStack,
        resume: Resume | None = None) -> None:
    """A run over several inputs, a glob or a directory (or with --filename-column)."""
    files = inputs.expand(request.inputs or (request.input,))
    if request.growing:
        # A log with no whole line yet (its header being written) waits for the next
        # run, as state.begin's note says; a run with nothing else scans nothing and
        # changes no state (SEMANTICS.md, "Resumed runs").
        files = [f for f in files if not _nothing_whole(resume, f.path)]
        if not files:
            return
    chain = ChainSource(request, dtype, files, stack, resume)
    if inputs.per_input_output(request.output):
        _run_per_input(request, dtype, chain, stack, resume)
    else:
        runner.run_table(request, dtype, chain, request.output_format(chain.kind), stack,
                         resume, text_input=chain.kind.format in DELIMITED)


def _consumed_whole(resume: Resume | None, path: str) -> bool:
    """Whether a --state run reads nothing of an input: past runs consumed it all."""
    span = state.span_of(resume, path)
    return span is not None and span.start > 0 and span.end <= span.start


def _nothing_whole(resume: Resume | None, path: str) -> bool:
    span = state.span_of(resume, path)
    return span is not None and span.end == 0


def _run_per_input(request: Request, dtype: np.dtype | None, chain: ChainSource,
                   stack: contextlib.ExitStack, resume: Resume | None) -> None:
    """`-o DIR/`: each input's rows to its own file, the scan carried across them."""
    from cumtool.pipeline import prefetch
    from cumtool.tables import make_plan
    from cumtool.view import View

    directory = str(request.output)
    fmt = request.to_format.lower() if request.to_format else chain.kind.format
    extension = f".{fmt}" if request.to_format else None
    relatives = inputs.relative_outputs(chain.files, directory, extension)
    text_input = chain.kind.format in DELIMITED
    options = runner.table_options(request, FileKind(fmt), text_input=text_input)
    plan = make_plan(request.op, request.axis, dtype, chain.schema, chain.name, options,
                     state.hints(chain, resume), **request.scan_options())
    runner.note_left_out(request, plan, text_input)
    request.check_table_output(fmt)
    finish = state.prepare(request, plan, chain, resume)
    view = View(request.op, "rows", chain.shown_name)
    # The outputs are written into a staging folder in the directory, and all put in
    # place together (with the state, if any) only once all succeeded (cumtool.staging).
    stage = stack.enter_context(staging.stage(directory))
    from cumtool.output import open_output

    written = []
    for k, relative in enumerate(relatives):
        if _consumed_whole(resume, chain.files[k].path):
            # An earlier run of the state scanned all of it, and it has not grown: no row
            # of it is new, and its output of then stays as it is (a header-only file
            # replaced it, every earlier day's output of a daily job).
            for batch in chain.file_batches(k, plan.parse, plan.text_unused):
                assert not batch.num_rows, "a consumed input gave rows"
            continue
        written.append(relative)
        target, staged = stage.target(relative), stage.staged(relative)
        kind = kind_from_name(target)
        out = FileKind(fmt, kind.compression if kind is not None and kind.format == fmt
                       else None)
        try:
            os.makedirs(os.path.dirname(staged), exist_ok=True)
        except OSError as error:
            raise OutputError(f"cannot write {target}: {error.strerror or error}") from None
        with open_output(staged) as stream, contextlib.ExitStack() as this_file:
            sink = runner.table_writer(request, out, stream, plan.schema, view,
                                       chain.files[k].path, target, chain.cut_by_time)

            def read(k: int = k, this_file: contextlib.ExitStack = this_file
                     ) -> Iterator[pa.RecordBatch]:
                reader = this_file.enter_context(contextlib.closing(prefetch(
                    chain.file_batches(k, plan.parse, plan.text_unused))))
                return runner.rebatch(reader, request.batch_rows)

            runner.scan_batches(plan, read, sink, False, this_file)
    # Every output is complete: only now do they replace what was there, all together.
    if resume is not None:
        stage.put_in_place(written, resume.commit)
        finish()  # writes the state, then commits everything
    else:
        stage.put_in_place(written)


def is_dataset(request: Request) -> bool:
    """Whether a run goes through ChainSource rather than one source."""
    given = request.inputs or (request.input,)
    return (inputs.is_dataset(given) or inputs.per_input_output(request.output)
            or request.filename_column is not None)

