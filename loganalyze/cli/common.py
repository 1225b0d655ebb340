"""What every command of the `loganalyze` command shares: the options all take, one-line
errors (`fail`, `Group`), and shell completion of run names."""

from __future__ import annotations

import os
import sys

import click

from loganalyze.errors import LoganalyzeError
from loganalyze.store import open_store

STORE = click.option("--store", default=None,
                     help="Run store: a folder or s3://bucket/prefix (default: $LOGANALYZE_STORE, else "
                          "~/.local/share/loganalyze).")


def fmt_option(*choices: str):
    return click.option("--format", "out_format", type=click.Choice(choices), default=choices[0],
                        show_default=True, help="Output format.")


def fail(message: str) -> None:
    """One line on stderr, secrets redacted and control characters made visible, and exit 2."""
    from loganalyze.escape import one_line, terminal
    from loganalyze.redact import redact

    click.echo(f"loganalyze: error: {terminal(one_line(redact(message)))}", err=True)
    sys.exit(2)


class Group(click.Group):
    """Every failure is one line on stderr and exit 2, never a traceback: LoganalyzeError,
    click's usage errors (a bad option value) and, unless $LOGANALYZE_TRACEBACK is set
    (the tests set it, so that a bug shows its traceback there), any other exception,
    reported as an internal error."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as e:
            where = f"{e.ctx.command_path} --help" if e.ctx else "loganalyze --help"
            fail(f"{e.format_message()} (see {where})")
        except click.ClickException as e:
            click.echo(f"loganalyze: error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except LoganalyzeError as e:
            fail(str(e))
        except BrokenPipeError:
            ctx.exit(0)
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except Exception as e:
            if os.environ.get("LOGANALYZE_TRACEBACK"):
                raise
            fail(f"internal error ({type(e).__name__}: {e}); please report it, with the command "
                 "(LOGANALYZE_TRACEBACK=1 shows the traceback)")


def complete_runs(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of run names, from the store given on the command line so far."""
    try:
        return sorted(r for r in open_store(ctx.params.get("store")).runs() if r.startswith(incomplete))
    except LoganalyzeError:
        return []

