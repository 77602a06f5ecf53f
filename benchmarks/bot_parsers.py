"""Parse times of the bot's parsers on adversarial input. Prints figures; asserts nothing.

Every parser in ``policy_checks/bot/parsers.py`` reads untrusted text (PR bodies, issue
bodies, comments, FEATURE.toml, rendered issue HTML), and so do the reader of a PR's
diff of ``policy-check-baseline.json`` (``baseline_diff.py``) and the recogniser of a
graduation PR (``graduation_pr.py``, on every diff of the PR), so each must take time
linear in the input. Each case below builds a text of the given size aimed at one regex or loop
(the first two are the known slow ones); every parser is run on every text, best of
``--repeat`` runs (garbage collection off while timing, as in timeit), in milliseconds.
A parser that raises prints ``ERROR`` (listed under the table); one that runs past
``--timeout`` is stopped and prints ``>Ns`` (each case runs in a child process).

Run: ``python benchmarks/bot_parsers.py`` (``--help`` for options), or against another
copy of the module, e.g. the committed one:
``git show HEAD:policy_checks/bot/parsers.py > /tmp/old.py``, then
``python benchmarks/bot_parsers.py --parsers-file /tmp/old.py --sizes 65536 --repeat 1``.
Target: every parser under 50 ms on every case at 64 KB (GitHub's largest body, 65,536
characters).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PR = "## Experimental Track\n\n- [x] This PR is an Experimental Track PR\n- Tracking issue: "
ISSUE = "### Owner\n\n@octocat\n\n### Use case\n\nx\n\n### Why experimental\n\nx\n\n### Graduation plan\n\n"
LINK = '<a class="user-mention notranslate" data-hovercard-type="user" href="https://github.com/u">@u</a> '
ENTRY = '{{"rule": "EXP001", "module": "{module}", "scope": "", "subject": "s", "count": {count}}}'


def fill(size: int, head: str, unit: str, tail: str = "") -> str:
    """``head``, then ``unit`` repeated, then ``tail``: exactly ``size`` characters (at least the head and tail)."""
    room = max(size - len(head) - len(tail), 0)
    return head + (unit * (room // len(unit) + 1))[:room] + tail


def numbered(size: int, line) -> str:
    """``line(0)``, ``line(1)``, ... one a line, cut to exactly ``size`` characters: distinct lines."""
    parts, length, i = [], 0, 0
    while length < size:
        parts.append(line(i) + "\n")
        length += len(parts[-1])
        i += 1
    return "".join(parts)[:size]


# (label, what it aims at, builder)
CASES = [
    ("tracking: '-' run", "owner/repo#N search, known 17 s", lambda n: fill(n, PR, "-")),
    ("heading ' #' run", "ATX heading, known 2 s", lambda n: fill(n, "", " #", "x")),
    ("issue heading ' #' run", "issue-form heading", lambda n: fill(n, "###", " #", "x")),
    ("'<!--' run", "HTML comment removal", lambda n: fill(n, PR, "<!--")),
    ("'<!-- -->' pairs", "HTML comment removal", lambda n: fill(n, PR, "<!-- x -->")),
    ("checkbox + spaces", "checkbox line", lambda n: fill(n, "## Experimental Track\n- [ ] ", " ", "x")),
    ("'1.' list + spaces", "checkbox line", lambda n: fill(n, "## Experimental Track\n", "1", ". [")),
    ("'tracking issue' + tabs", "tracking line", lambda n: fill(n, "## Experimental Track\ntracking issue", "\t", "x")),
    ("'tracking' run", "tracking line", lambda n: fill(n, "## Experimental Track\n", "tracking ")),
    ("'a/' run + '#'", "owner/repo#N", lambda n: fill(n, PR, "a/", "#")),
    ("owner run, no '/'", "owner/repo#N", lambda n: fill(n, PR, "a", "#1")),
    ("'a.' run after '/'", "owner/repo#N name", lambda n: fill(n, PR + "a/", "a.", "#x")),
    ("'http://' run", "issue URL", lambda n: fill(n, PR, "http://")),
    ("URL host run", "issue URL host", lambda n: fill(n, PR + "https://", "a.")),
    ("URL owner run", "issue URL owner", lambda n: fill(n, PR + "https://github.com/", "a-", "/")),
    ("'1' run after '#'", "#N, GH-N, dates", lambda n: fill(n, PR + "#", "1", "a")),
    ("'#' + a long number", "#N: int() of it", lambda n: fill(n, PR + "#", "1", " ")),
    ("'GH-' + digits", "GH-N", lambda n: fill(n, PR + "GH-", "1", "x")),
    ("'#' run", "#N, headings", lambda n: fill(n, PR, "#")),
    ("'#' line", "heading level", lambda n: fill(n, "", "#")),
    ("'@' run", "logins, mentions", lambda n: fill(n, "### Owner\n\n", "@")),
    ("login-like run", "Owner login", lambda n: fill(n, "### Owner\n\n@", "a-")),
    ("'[x]' run", "checkbox line", lambda n: fill(n, "## Experimental Track\n- ", "[x]")),
    ("'```' lines", "code fences", lambda n: fill(n, "## Experimental Track\n", "```\n~~~\n")),
    ("'/experimental extend' + spaces", "extend command", lambda n: fill(n, "/experimental extend ", " ", "x")),
    ("'/experimental' lines", "extend command", lambda n: fill(n, "", "/experimental \n")),
    ("indented extend", "extend command", lambda n: fill(n, "", " \t", "/experimental extenx")),
    ("'Target release:' + spaces", "graduation plan", lambda n: fill(n, ISSUE + "Target release:", " ", "x")),
    ("'Target date:' + '1' run", "graduation plan", lambda n: fill(n, ISSUE + "Target date: ", "1", "-")),
    ("'target ' run", "graduation plan", lambda n: fill(n, ISSUE, "target ")),
    ("TOML '[' run", "FEATURE.toml", lambda n: fill(n, "", "[")),
    ("TOML quoted key", "FEATURE.toml", lambda n: fill(n, 'a = 1\n"', "k", '" = 1')),
    ("TOML nested arrays", "FEATURE.toml", lambda n: fill(n, "a = ", "[")),
    ("'<a class=' run", "mention links", lambda n: fill(n, "", "<a class=")),
    ("'<a ' run", "mention links", lambda n: fill(n, "", "<a ")),
    ("'</' run", "mention links", lambda n: fill(n, "", "</")),
    ("'<![' run", "mention links", lambda n: fill(n, "", "<![")),
    ("'<?' run", "mention links", lambda n: fill(n, "", "<?")),
    ("'<script>' + '</' run", "mention links", lambda n: fill(n, "<script>", "</")),
    ("one huge <a> tag", "mention links", lambda n: fill(n, '<a class="user-mention" ', 'x= "" ', ">@u</a>")),
    ("huge <a> tag, bare attributes", "mention links", lambda n: fill(n, '<a class="user-mention" ', "x ", ">@u</a>")),
    ("'<a user-mention>' run", "mention links", lambda n: fill(n, "", '<a class="user-mention">')),
    ("tags inside a mention link", "mention links", lambda n: fill(n, '<a class="user-mention">@', "<b>")),
    ("'&#' + digits in a mention", "mention links", lambda n: fill(n, '<a class="user-mention">@&#', "1", ";</a>")),
    ("real mention links", "mention links", lambda n: fill(n, "<p>", LINK, "</p>")),
    ("baseline: new entries", "baseline entries",
     lambda n: numbered(n, lambda i: "+    " + ENTRY.format(module=f"m{i}", count=1) + ",")),
    ("baseline: renames", "baseline moves",
     lambda n: numbered(n, lambda i: "-+"[i % 2] + "    " + ENTRY.format(module=f"m{i}", count=1 + i % 3) + ",")),
    ("baseline: one entry, many lines", "baseline netting", lambda n: fill(n, "", "+    " + ENTRY.format(
        module="m", count=1) + ",\n-    " + ENTRY.format(module="m", count=2) + ",\n")),
    ("baseline: deep nesting", "baseline JSON", lambda n: fill(n, '+{"rule": ', "[", "}")),
    ("baseline: long count", "baseline count", lambda n: fill(n, '+{"count": ', "1", "}")),
    ("baseline: escapes", "baseline JSON", lambda n: fill(n, '+{"rule": "', "\\u0041", '", "count": 1}')),
    ("baseline: '+' lines", "baseline lines", lambda n: fill(n, "", "+ ,\n")),
    ("baseline: '{' run", "baseline frame", lambda n: fill(n, "+", "{")),
    ("graduation: '@' run", "decorator lines", lambda n: fill(n, "-@flashinfer_experimental_api\n+", "@")),
    ("graduation: dotted decorator", "decorator lines", lambda n: fill(n, "-@flashinfer_experimental_api\n+@", "a.")),
    ("graduation: gate call run", "gate calls", lambda n: fill(n, "+", "require_experimental_x")),
    ("graduation: shim marker run", "shim lines", lambda n: fill(n, "+__graduated_to__ = '", "flashinfer.")),
    # the approval command is read with markdown-it-py's block parser: containers and paragraphs, parsed
    # only when a line can start the command's paragraph (the first four are skipped by that scan; the
    # last two are parsed: a body of commands, and one command line after 64 KB of setext headings)
    ("approve: setext paragraphs", "CommonMark blocks", lambda n: fill(n, "approve-policy\n", "a\n=\n")),
    ("approve: lazy quote lines", "CommonMark blocks", lambda n: fill(n, "approve-policy\n", "> a\nb\n")),
    ("approve: fences", "CommonMark blocks", lambda n: fill(n, "approve-policy\n", "```\n")),
    ("approve: nested lists", "CommonMark blocks", lambda n: fill(n, "approve-policy\n", "- ")),
    ("approve: commands", "CommonMark blocks",
     lambda n: fill(n, "", "/experimental-track approve-policy 0123456789abcdef\n\n")),
    ("approve: a command + setext", "CommonMark blocks",
     lambda n: fill(n, "/experimental-track approve-policy 0123456789abcdef\n\n", "a\n=\n")),
    ("graduation: swaps, line by line", "decorator lines",
     lambda n: numbered(n, lambda i: "-@flashinfer_experimental_api" if i % 2 else "+@flashinfer_api")),
]

PARSERS = [
    # (column, attribute of the module, call)
    ("pr_body", "parse_pr_body", lambda f, t: f(t)),
    ("issue", "parse_tracking_issue", lambda f, t: f(t)),
    ("sections", "issue_sections", lambda f, t: f(t)),
    ("extend", "parse_extend_command", lambda f, t: f(t)),
    ("approve", "parse_policy_approvals", lambda f, t: f(t)),
    ("toml", "parse_feature_toml", lambda f, t: f("x", t)),
    ("ref", "parse_tracking_ref", lambda f, t: f(t)),
    ("login", "parse_login", lambda f, t: f(t)),
    ("reason", "normalise_reason", lambda f, t: f(t)),
    ("mentions", "mentioned_users", lambda f, t: f(t)),
    ("baseline", "baseline_diff.parse_baseline_patch", lambda f, t: f(t)),
    # a graduation PR: the text is the diff of a core file and of a removed record and shim
    ("graduation", "graduation_pr.recognise", lambda f, t: f(_graduation_listing(t), texts=_graduation_texts(t))),
    # what a PR adds to the track: one new core module whose text is `t`
    ("added", "graduation_pr.added_experimental", lambda f, t: f(_added_module(t))),
]


def _graduation_listing(patch: str) -> list:
    """A PR's file listing whose every diff is `patch`: a core module, the feature's
    removed record, its shim ``__init__``."""
    from policy_checks.bot.graduation_pr import Listed

    return [Listed("flashinfer/gemm.py", "modified", None, patch),
            Listed("flashinfer/experimental/feat/FEATURE.toml", "removed", None, patch),
            Listed("flashinfer/experimental/feat/__init__.py", "modified", None, patch)]


def _graduation_texts(text: str) -> dict:
    """The texts the PR check reads for `_graduation_listing`: each file is `text` at head
    and at base (the record only at base, as it was removed)."""
    from policy_checks.bot.revisions import FileAtRevisions

    return {listed.path: FileAtRevisions(listed.path, base=text, head=None if listed.status == "removed" else text)
            for listed in _graduation_listing(text)}


def _added_module(text: str) -> dict:
    """The texts the PR check reads for one new core module holding `text`."""
    from policy_checks.bot.revisions import FileAtRevisions

    return {"flashinfer/new_op.py": FileAtRevisions("flashinfer/new_op.py", base=None, head=text)}


def load_parsers(path: Path | None):
    if path is None:
        from policy_checks.bot import parsers

        return parsers
    import policy_checks.bot  # noqa: F401  (the package, for relative imports in the file)

    spec = importlib.util.spec_from_file_location("policy_checks.bot._parsers_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def find(module, name: str):
    """``name`` in the parsers module, or ``other.name`` in another module of the bot package."""
    if "." in name:
        other, name = name.split(".")
        try:
            module = importlib.import_module(f"policy_checks.bot.{other}")
        except ImportError:  # a checkout from before that module: the column shows n/a
            return None
    return getattr(module, name, None)


def measure(parsers_file, text, columns, repeat, budget_s, pipe) -> None:
    """In the child: time each parser in ``columns`` on ``text``, sending ``(column, ms | error)`` as each ends."""
    module = load_parsers(parsers_file)
    calls = {column: (find(module, name), call) for column, name, call in PARSERS}
    for column in columns:
        function, call = calls[column]
        if function is None:
            pipe.send((column, "n/a"))
            continue
        best = float("inf")
        spent = 0.0
        try:
            for _ in range(repeat):
                gc.disable()
                start = time.perf_counter()
                call(function, text)
                elapsed = time.perf_counter() - start
                gc.enable()
                best = min(best, elapsed)
                spent += elapsed
                if spent > budget_s:  # a slow parser: one or two runs say enough
                    break
        except Exception as exc:  # noqa: BLE001  (a parser must not raise; report it)
            gc.enable()
            pipe.send((column, f"ERROR {type(exc).__name__}"))
            continue
        pipe.send((column, best * 1e3))
    pipe.send(None)


def run_case(context, parsers_file, text, repeat, timeout_s) -> dict:
    """Time every parser on ``text`` in a child process, stopping any one that runs past ``timeout_s``."""
    results: dict = {}
    remaining = [column for column, _, _ in PARSERS]
    while remaining:
        receiver, sender = context.Pipe(duplex=False)
        child = context.Process(target=measure, args=(parsers_file, text, remaining, repeat, 2.0, sender))
        child.start()
        sender.close()
        while remaining:
            if not receiver.poll(timeout_s):
                child.kill()
                results[remaining.pop(0)] = f">{timeout_s:g}s"
                break
            try:
                message = receiver.recv()
            except EOFError:  # the child died
                results[remaining.pop(0)] = "CRASHED"
                break
            if message is None:
                break
            column, value = message
            results[column] = value
            remaining.remove(column)
        child.join()
        receiver.close()
    return results


def cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return "ERROR" if value.startswith("ERROR") else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1024,16384,65536", help="text sizes in characters, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="runs per parser and text (the best is shown)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before a parser's run is stopped")
    parser.add_argument("--target-ms", type=float, default=50.0, help="pass when every parser is faster")
    parser.add_argument("--only", default="", help="run only the cases whose label contains this text")
    parser.add_argument("--parsers-file", type=Path, help="time this copy of parsers.py instead")
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    columns = [column for column, _, _ in PARSERS]
    module = args.parsers_file or ROOT / "policy_checks" / "bot" / "parsers.py"

    print(f"parsers: {module}")
    print(f"Python {sys.version.split()[0]}; best of {args.repeat} runs, ms; "
          f"target: every parser under {args.target_ms:g} ms at {max(sizes) // 1024} KB")
    header = f"{'case':32} {'size':>6} " + " ".join(f"{column:>9}" for column in columns) + "  target"
    print(header)
    print("-" * len(header))
    failures = 0
    errors = []
    cases_run = 0
    slowest = (0.0, "", "")  # (ms, case, parser) at the largest size
    for label, _aim, build in CASES:
        if args.only not in label:
            continue
        for size in sizes:
            text = build(size)
            results = run_case(context, args.parsers_file, text, args.repeat, args.timeout)
            numbers = [value for value in results.values() if isinstance(value, float)]
            bad = any(isinstance(value, str) and value != "n/a" for value in results.values())
            passed = not bad and all(value < args.target_ms for value in numbers)
            verdict = "ok" if passed else "FAIL"
            failures += not passed and size == max(sizes)
            if size == max(sizes):
                cases_run += 1
                slowest = max([slowest] + [(value, label, c) for c, value in results.items()
                                           if isinstance(value, float)])
            size_text = f"{size // 1024} KB" if size % 1024 == 0 else str(size)
            print(f"{label:32} {size_text:>6} " + " ".join(f"{cell(results[c]):>9}" for c in columns)
                  + f"  {verdict}", flush=True)
            errors += [f"  {label}, {size_text}, {c}: {results[c]}" for c in columns
                       if isinstance(results[c], str) and results[c].startswith("ERROR")]
    if errors:
        print("\nraised (a parser must not):", *errors, sep="\n")
    print(f"\n{failures} case(s) miss the target at {max(sizes) // 1024} KB")
    if args.json:
        import bench_record

        bench_record.write(args.json, "bot_parsers", {
            "cases": cases_run, "parsers": len(columns), "sizes": sizes, "repeat": args.repeat,
            "largest_size": max(sizes), "slowest_ms": round(slowest[0], 2), "slowest_case": slowest[1],
            "slowest_parser": slowest[2], "misses": failures, "errors": len(errors), "target_ms": args.target_ms,
        }, bench_record.command("bot_parsers.py"))


if __name__ == "__main__":
    main()
