"""``python -m biovqa``: the ``biovqa`` command line."""

from biovqa.cli import main


def _run() -> None:
    try:
        main()
    finally:
        # CPython (3.11 to 3.13 at least) keeps one process-wide flag saying whether the last
        # exec() or eval() of source text ended in a KeyboardInterrupt, and under ``python -m`` it
        # reads that flag when the process exits. A Ctrl-C that once unwound through such a call
        # (a dataclass or named tuple being made while a module is imported lazily) would end the
        # process "killed by SIGINT", status -2, even after the command had handled it, said so
        # and chosen 130 or 143. Evaluating any text clears the flag; an interrupt that really
        # escapes main() sets it again on its way out, so that exit stays a death by SIGINT.
        exec("pass")


_run()
