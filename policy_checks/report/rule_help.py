"""What the reports say about a rule beyond its id: the explanation ``policy-check
explain`` prints (also SARIF's ``help``, as text and as Markdown), the link to its
entry in the docs (SARIF's ``helpUri``), and whether ``policy-check fix`` has a
rewrite for it (the ``[*]`` of the text report).

Imports the rule table only in the functions that read it: the text report then loads
no rule, and no format loads the runner or the fixer (libcst)."""

from __future__ import annotations

import re

from .install_forms import REPOSITORY, release_tag

# No site publishes docs/: the links the reports give point at the page in the repository,
# at the running version's release tag (docs/releasing.rst), so that a rule's text is the
# one of the checker that reported it. The page of the checker is docs/policy_check.rst,
# and each rule id in its rule table is an anchor (an inline target, ``_`EXP001```).
DOCS_URL = f"{REPOSITORY}/blob/{release_tag()}/docs/"
PAGE = "policy_check.rst"

# The rules `policy-check fix` has a safe rewrite for (`policy_checks.fix.apply.FIXABLE_RULES`,
# which imports libcst: a test keeps the two equal). A finding of one is marked ``[*]``;
# the fixer still leaves to a person the cases it cannot rewrite safely, and says which.
FIXABLE = frozenset({"EXP001", "EXP002", "EXP004", "EXP006"})

_SOURCES = (".py", ".rst", ".ini", ".toml", ".cfg")


def page_uri() -> str:
    """The checker's docs page."""
    return DOCS_URL + PAGE


def help_uri(rule_id: str) -> str:
    """The rule's row in the docs' rule table."""
    return f"{page_uri()}#{rule_id.lower()}"


def doc(rule) -> str:
    import inspect  # only for a rule's help, not for every text report

    return inspect.cleandoc(getattr(rule, "doc", None) or type(rule).__doc__ or "")


def _examples(rule) -> list:
    """``(label, note, [(path, content)])`` of the first valid and first invalid example."""
    found = []
    for label, examples in (("Valid", getattr(rule, "VALID", ())), ("Invalid", getattr(rule, "INVALID", ()))):
        for example in examples[:1]:
            files = [(path, content) for path, content in example.files.items()
                     if content and isinstance(content, str) and path.endswith(_SOURCES)]
            found.append((label, example.note, files))
    return found


def explanation(rule) -> str:
    """What ``policy-check explain ID`` prints: summary, doc, what the rule reads, an
    example of each kind."""
    lines = [f"{rule.id} {rule.name}: {rule.summary}", "", doc(rule)]
    reads = getattr(rule, "reads", ())
    if reads:
        lines += ["", f"Reads: {', '.join(kind.name for kind in reads)}."]
    for label, note, files in _examples(rule):
        lines += ["", f"{label} example{' (' + note + ')' if note else ''}:"]
        for path, content in files:
            lines.append(f"  # {path}")
            lines += [f"    {line}" for line in content.splitlines()]
    return "\n".join(lines) + "\n"


def markdown(rule) -> str:
    """`explanation` as Markdown (code scanning renders a rule's help so)."""
    lines = [f"**{rule.id} {rule.name}**: {rule.summary}", "", doc(rule).replace("``", "`")]
    reads = getattr(rule, "reads", ())
    if reads:
        lines += ["", f"Reads: {', '.join(kind.name for kind in reads)}."]
    for label, note, files in _examples(rule):
        lines += ["", f"{label} example{' (' + note + ')' if note else ''}:", ""]
        for path, content in files:
            fence = "````" if "```" in content else "```"
            language = "python" if path.endswith(".py") else ""
            lines += [f"`{path}`:", "", fence + language, *content.splitlines(), fence, ""]
    lines += ["", f"[{rule.id} in the policy-check documentation]({help_uri(rule.id)})"]
    return "\n".join(lines).rstrip("\n") + "\n"


def rst_table() -> str:
    """The rule table of docs/policy_check.rst, made from the registry (``policy-check
    rules --format rst``): each id an anchor, its name and what it finds (its summary;
    the command that reports it, for the ids ``run`` never checks)."""
    from ..rules.registry import ELSEWHERE, META_RULES, RULES  # here: a text report loads no rule

    rows = [(f"_`{i}`", r.name, r.summary) for i, r in [*RULES.items(), *META_RULES.items()]]
    rows += [(f"_`{i}`", r.name, f"{r.summary} (``policy-check {command}``)")
             for command, ids in ELSEWHERE.items() for i, r in ids.items()]
    rows = [(i, n, _rst_text(f)) for i, n, f in rows]
    widths = [max(len(row[c]) for row in [*rows, ("id", "name", "finds")]) for c in range(3)]
    rule = "  ".join("=" * w for w in widths)
    lines = [rule, "  ".join(h.ljust(w) for h, w in zip(("id", "name", "finds"), widths)).rstrip(), rule]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join([*lines, rule]) + "\n"


def _rst_text(text: str) -> str:
    """`text` as reST shows it: the characters markup would take escaped (``__init__``
    is no link), double-backquoted literals kept."""
    parts = re.split(r"(``[^`]+``)", text)
    return "".join(p if p.startswith("``") else re.sub(r"([\\*_`|])", r"\\\1", p) for p in parts)


def rule_table() -> list:
    """Every rule as ``policy-check rules --format json`` lists it, in id order."""
    from ..rules.registry import ALL_IDS

    return [
        {"id": rule_id, "name": rule.name, "summary": rule.summary, "fixable": rule_id in FIXABLE,
         "help_uri": help_uri(rule_id)}
        for rule_id, rule in sorted(ALL_IDS.items())
    ]
