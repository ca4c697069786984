"""``schedlog rules``: the pure rules layer on the command line (docs/protocol.md#batch-rules,
docs/cli.md#rules-next).

Only the argparse wiring lives here: each command imports its implementation
(:mod:`schedlog.cli._rules`) when it runs. ``RULES_OPS``, ``decode_any_record`` and
``upcoming_targets`` are still importable from here; they load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from schedlog._lazy import lazy_command, lazy_exports
from schedlog.about import docs_url

if TYPE_CHECKING:
    from schedlog.cli._rules import RULES_OPS, decode_any_record, upcoming_targets

__all__ = ["OP_NAMES", "RULES_OPS", "decode_any_record", "register", "upcoming_targets"]

#: The implementation's public names, imported on first use.
_LAZY: Final = dict.fromkeys(
    ("RULES_OPS", "decision_json", "decode_any_record", "upcoming_targets"), "schedlog.cli._rules"
)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

#: The ``rules batch`` ops in the order of ``RULES_OPS``, for the help text (a test keeps the
#: two equal, so the help never imports the rules layer).
OP_NAMES: Final = (
    "create",
    "decide",
    "canonical_cron",
    "canonical_zone",
    "parse_at",
    "decode_record",
    "update",
    "decode_change",
    "fold",
)


_cmd_batch = lazy_command("schedlog.cli._rules", "cmd_batch")
_cmd_next = lazy_command("schedlog.cli._rules", "cmd_next")


def register(sub: Any) -> None:
    rules = sub.add_parser(
        "rules",
        help="explain and evaluate rules (pure; no storage)",
        description="The pure rules layer: canonical cron and zones, `at` parsing, decisions.",
    )
    rsub = rules.add_subparsers(dest="rules_command", required=True, metavar="COMMAND")
    batch = rsub.add_parser(
        "batch",
        help=f"answer JSON Lines rule requests from stdin ({docs_url('protocol.md#batch-rules')})",
        description=(
            "Read one JSON request per stdin line and write one JSON result per line. Ops: "
            + ", ".join(OP_NAMES)
        ),
    )
    batch.set_defaults(func=_cmd_batch)
    nxt = rsub.add_parser(
        "next",
        help="list the upcoming targets of a rule",
        description=(
            "Explain a rule: the decision at --at and the next --count targets. Give a stored "
            "record with --record JSON|@FILE (JSON output {record, at, decision, upcoming}), or "
            "describe a rule with --cron/--daily/--weekly/--every and --time-zone for a readable "
            "listing."
        ),
    )
    nxt.add_argument("--record", help="a stored record as inline JSON, or @FILE")
    nxt.add_argument("--at", help="decision instant (RFC 3339); default: now")
    nxt.add_argument("--after", help="alias of --at for the human form")
    nxt.add_argument("--count", type=int, default=5, help="how many targets, 1-1000 (default 5)")
    nxt.add_argument("--cron", help='a five-field cron expression, e.g. "*/15 9-17 * * 1-5"')
    nxt.add_argument("--daily", metavar="HH:MM:SS", help="a daily wall-clock time")
    nxt.add_argument("--weekly", metavar="HH:MM:SS", help="a weekly wall-clock time")
    nxt.add_argument("--weekdays", help="ISO weekdays for --weekly, e.g. 1,3,5 (default 1-5)")
    nxt.add_argument("--every", type=int, metavar="SECONDS", help="a fixed interval")
    nxt.add_argument("--time-zone", help="IANA zone for --cron/--daily/--weekly (default UTC)")
    nxt.add_argument(
        "--json", action="store_true", help="print the JSON object {record, at, decision, upcoming}"
    )
    nxt.set_defaults(func=_cmd_next)
