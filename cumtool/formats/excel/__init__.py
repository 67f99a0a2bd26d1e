"""Spreadsheets, read only: .xlsx, .xls and .ods through fastexcel (the `excel` extra),
in excel.py, loaded only when a spreadsheet is read."""

from __future__ import annotations

from cumtool.errors import UsageError
from cumtool.formats import Format, Opening, SourceBase

ZIP_MAGIC = b"PK\x03\x04"  # .xlsx and .ods are zip archives (so is .npz)
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # .xls


def _read(opening: Opening) -> SourceBase:
    from cumtool.formats import unreadable
    from cumtool.formats.excel.excel import SpreadsheetSource

    if opening.path:
        data: str | bytes = opening.path
    else:
        try:
            data = opening.stream.read()
        except (OSError, ValueError) as error:
            raise unreadable(opening.name, "a spreadsheet", error) from None
    return SpreadsheetSource(data, opening.name, opening.request.sheet,
                             header=opening.request.header, request=opening.request)


# Members' names (and an .ods' mimetype, its first member) are in local headers.
def _is_ods(head: bytes) -> bool:
    return b"opendocument.spreadsheet" in head[:200]


def _is_xlsx(head: bytes) -> bool:
    return not _is_ods(head) and (b"xl/" in head or b"[Content_Types].xml" in head[:200])


FORMATS = (
    Format("xlsx", (".xlsx", ".xlsm"), rank=80, binary=True, magic=(ZIP_MAGIC,),
           sniff=_is_xlsx, spreadsheet=True, reader=_read),
    Format("xls", (".xls",), rank=90, binary=True, magic=(OLE2_MAGIC,), spreadsheet=True,
           reader=_read),
    Format("ods", (".ods",), rank=100, binary=True, magic=(ZIP_MAGIC,), sniff=_is_ods,
           spreadsheet=True, reader=_read),
)


def check_sheet(sheet: str) -> None:
    """--sheet before any file is opened: a name, or a number from 1 (that it is given
    for a spreadsheet is its declaration's, cumtool.options.refuse_unread)."""
    if not sheet.strip():
        raise UsageError("--sheet needs a sheet name or a number from 1")
    if sheet.strip() == "0":
        raise UsageError("--sheet 0: sheets are numbered from 1")
