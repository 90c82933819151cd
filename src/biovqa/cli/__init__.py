"""The ``biovqa`` command line (``biovqa --help``; ``python -m biovqa``)."""


def main(argv: list[str] | None = None) -> None:
    from biovqa.cli.main import main as _main

    _main(argv)


__all__ = ["main"]
