"""`loganalyze formats`: the formats loganalyze reads, a format tested against its samples,
a built-in written out as a format file."""

from __future__ import annotations

import sys

import click

from loganalyze.cli.common import fmt_option
from loganalyze.errors import LoganalyzeError
from loganalyze.render import print_json


@click.command("formats")
@click.option("--test", "test_target", metavar="FILE|NAME", default=None,
              help="Test a format file, or a known format by name, against its own samples instead; exit 1 if "
                   "one fails.")
@click.option("--check", "old_test_target", metavar="FILE|NAME", default=None, hidden=True,
              help="The earlier name of --test.")
@click.option("--dump", "dump_name", metavar="NAME", default=None,
              help="Write the built-in format NAME as a format file (TOML) to stdout instead: a starting point for "
                   "your own. Kinds that need Python handlers are in it commented out.")
@fmt_option("text", "json")
def formats_cmd(test_target, old_test_target, dump_name, out_format):
    """List the formats loganalyze reads: releases covered, line kinds, a sample of each.

    A format can be added without code, as a TOML or JSON file (docs/formats.md); load
    it with --formats or $LOGANALYZE_FORMATS. --test parses each sample line of a format
    with the whole format: it must be claimed by its own kind and yield its fields (the
    values a sample declares, exactly).

    \b
    Example:
      loganalyze formats
      loganalyze formats --test my_server.toml
      loganalyze formats --test vllm
      loganalyze formats --dump sglang > my_sglang.toml
      loganalyze --formats my_formats/ ingest server.log
    """
    from loganalyze import formatinfo
    from loganalyze.formats.dump import dump_builtin

    if old_test_target is not None:  # the earlier name: "check" is the store's command
        click.echo("loganalyze: formats --check is deprecated, use --test (the same argument)", err=True)
        if test_target is None:
            test_target = old_test_target
    if test_target is not None and dump_name is not None:
        raise LoganalyzeError("--test and --dump are separate commands: give one")
    if dump_name is not None:
        click.echo(dump_builtin(dump_name), nl=False)
        return
    if test_target is None:
        listing = formatinfo.describe()
        if out_format == "json":
            print_json(listing)
        else:
            click.echo(formatinfo.render_formats(listing))
        return
    label, name, results = formatinfo.target_samples(test_target)
    if out_format == "json":
        print_json({"file": label, "format": name, "samples": [r.to_dict() for r in results]})
    else:
        click.echo(formatinfo.render_samples(label, name, results))
    sys.exit(1 if any(r.problem for r in results) else 0)

