"""EXP000 parse-error."""

from __future__ import annotations

from ..analysis.needs import DOCS_PAGE, PYTHON_FILE
from .base import Example, Rule


class ParseError(Rule):
    """A file the checker reads could not be read or parsed, or has a name that is not valid UTF-8.

    Such a name is shown with ``\\xNN`` escapes; no module can have such a name.

    Every other rule reasons about what a file imports and defines. A file a rule must read
    that does not parse cannot be reasoned about, so a violation could hide in it. The
    finding says so instead of silently passing the file. The rest of the tree is still
    checked.

    Only the files the checker must read are parsed, so only those are reported:

    - the files whose bytes spell a trigger of a rule (`policy_checks.analysis.needs`);
    - the files a rule or the import-time analysis follows into;
    - the conftest files of the stable lane.

    A file whose bytes concern no rule is not parsed, so a syntax error there is not
    reported. Python cannot import such a file, so nothing in it runs. The project's own
    tests or linters meet it.

    What the checker cannot trust is reported the same way, as unread:

    - a symbolic link, to a file or a directory, anywhere in the package or the test lanes.
      The finding names its target. Links are never followed: one may lead out of the
      repository, or make code importable that the checker never reads;
    - a ``.pyc`` outside ``__pycache__``. Python imports it as a module, and it has no
      source to read;
    - a ``.pyc`` git selects in a ``__pycache__`` whose source is missing.
    """

    id = "EXP000"
    name = "parse-error"
    summary = "a file could not be read or parsed; the others are still checked"
    # the message of a file that does not parse ({message}: the parser's)
    CANNOT_PARSE = "cannot parse: {message}"
    # It reports what the rules read: the files every registered rule's declaration
    # makes primary, selected or not (`needs.Prefilter`), and what they read beyond
    # those, so it runs after them.
    reads = (PYTHON_FILE, DOCS_PAGE)
    triggers = ()
    reads_every_rules_files = True
    runs_last = True

    VALID = [Example({"flashinfer/__init__.py": "", "flashinfer/ok.py": "x = 1\n"})]
    INVALID = [
        Example(
            {"flashinfer/__init__.py": "", "flashinfer/bad.py": "from . import experimental\ndef broken(:\n    pass\n"},
            expect=(("flashinfer/bad.py", 2),),
        ),
        Example(
            {"flashinfer/__init__.py": "", "flashinfer/latin.py": b"from . import experimental\ns = '\xff\xfe'\n"},
            expect=(("flashinfer/latin.py", 2),),
            note="undecodable bytes",
        ),
        Example(
            {"flashinfer/__init__.py": "", "flashinfer/kernels.pyc": b"\x00compiled"},
            expect=(("flashinfer/kernels.pyc", 1),),
            note="a compiled module without its source",
        ),
    ]

    def check(self, project):
        project.docs_pages()  # reading the pages records their problems
        for rel, message in project.read_problems:
            yield self.finding(rel, 1, 1, message, subject=message)
        for rel in project.files:
            facts = project.known_facts(rel)
            if facts is not None and facts.syntax_error is not None:
                line, column, message = facts.syntax_error
                # the error's kind ("SyntaxError"), not its wording: that may name a line
                kind = message.partition(":")[0]
                yield self.finding(rel, line, column, self.CANNOT_PARSE.format(message=message),
                                   subject=self.CANNOT_PARSE.format(message=kind))
