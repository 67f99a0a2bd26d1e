"""The `cumtool` command's entry point. Loading the modules takes tens of milliseconds; a
Ctrl-C meanwhile ends the run as one during it does (one line, status 130), not with a
traceback."""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130  # 128 + SIGINT


def main() -> None:
    try:
        from cumtool.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("Error: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    cli_main()
