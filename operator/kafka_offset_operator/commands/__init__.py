"""One module per CLI subcommand; each has `add_parser(subparsers)` and sets `run` on its parser."""
