"""One module per `python -m harness` command; each exposes add_parser(subparsers)."""
