"""EXP002 fix: eager re-exports from the experimental package become lazy (PEP 562)."""

from __future__ import annotations

import sys
import textwrap

from policy_checks.fix.apply import write

KERNELS = "fxpkg.experimental.feat.kernels"


def test_a_new_getattr_and_dir_export_the_names_lazily(tree):
    tree.write(
        {
            "fxpkg/__init__.py": '''\
                """The fixture package."""

                from .experimental.feat.kernels import run as feat_run, scale
                from .utils import backend_requirement

                __all__ = ["backend_requirement", "feat_run", "scale"]
                '''
        }
    )
    result = tree.fix("EXP002", "fxpkg/__init__.py", 3)
    assert result.left == [] and write(tree.project, result)
    assert tree.read("fxpkg/__init__.py").decode() == textwrap.dedent(
        '''\
        """The fixture package."""

        from .utils import backend_requirement

        __all__ = ["backend_requirement", "feat_run", "scale"]


        def __getattr__(name):
            if name == "feat_run":
                from .experimental.feat.kernels import run as feat_run

                return feat_run
            if name == "scale":
                from .experimental.feat.kernels import scale

                return scale
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


        def __dir__():
            return sorted(set(globals()) | {"feat_run", "scale"})
        '''
    )
    package = tree.imported("fxpkg")
    assert KERNELS not in sys.modules  # the import is lazy now
    assert {"feat_run", "scale"} <= set(dir(package))
    assert package.feat_run(1) == 2 and package.scale(1) == 10
    namespace = {}
    exec("from fxpkg import *", namespace)  # __all__ still lists the names, and they resolve
    assert namespace["feat_run"](3) == 4
    try:
        package.missing
    except AttributeError as error:
        assert "missing" in str(error)
    else:
        raise AssertionError("an unknown name must still raise AttributeError")


def test_an_existing_getattr_and_dir_are_extended(tree):
    tree.write(
        {
            "fxpkg/__init__.py": """\
                import importlib

                from .experimental.feat.kernels import run
                from .experimental.feat import kernels as feat_kernels, LIMIT_IS_NOT_HERE  # noqa

                _LAZY = {"backend_requirement": "utils"}


                def __getattr__(attribute):
                    \"\"\"Lazy exports.\"\"\"
                    module = _LAZY.get(attribute)
                    if module is None:
                        raise AttributeError(attribute)
                    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


                def __dir__():
                    return sorted(set(globals()) | set(_LAZY))
                """
        }
    )
    tree.write({"fxpkg/experimental/feat/__init__.py": "LIMIT_IS_NOT_HERE = 1\n"})
    result = tree.fix("EXP002", "fxpkg/__init__.py", 3, 4)
    assert result.left == [] and len(result.fixed) == 2
    assert write(tree.project, result)
    text = tree.read("fxpkg/__init__.py").decode()
    assert text == textwrap.dedent(
        '''\
        import importlib


        _LAZY = {"backend_requirement": "utils"}


        def __getattr__(attribute):
            """Lazy exports."""
            if attribute == "run":
                from .experimental.feat.kernels import run

                return run
            if attribute == "feat_kernels":
                from .experimental.feat import kernels as feat_kernels

                return feat_kernels
            if attribute == "LIMIT_IS_NOT_HERE":
                from .experimental.feat import LIMIT_IS_NOT_HERE

                return LIMIT_IS_NOT_HERE
            module = _LAZY.get(attribute)
            if module is None:
                raise AttributeError(attribute)
            return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


        def __dir__():
            return sorted(set(globals()) | set(_LAZY) | {"feat_kernels", "LIMIT_IS_NOT_HERE", "run"})
        '''
    )
    package = tree.imported("fxpkg")
    assert KERNELS not in sys.modules
    assert {"run", "feat_kernels", "LIMIT_IS_NOT_HERE", "backend_requirement"} <= set(dir(package))
    assert package.run(1) == 2 and package.feat_kernels.scale(2) == 20 and package.LIMIT_IS_NOT_HERE == 1
    assert package.backend_requirement is sys.modules["fxpkg.utils"].backend_requirement


def test_a_name_the_package_itself_uses_stays_eager(tree):
    original = b"from .experimental.feat.kernels import run, scale\n\nDOUBLE_RUN = run\n"
    tree.write({"fxpkg/__init__.py": original})
    result = tree.fix("EXP002", "fxpkg/__init__.py", 1)
    [(finding, reason)] = result.left
    assert reason == "partly fixed; 'run' is used in this module (line 3); a lazy export is not a global"
    assert result.after.startswith(b"from .experimental.feat.kernels import run\n\nDOUBLE_RUN = run\n\n\ndef __getattr__(name):")
    assert write(tree.project, result)
    package = tree.imported("fxpkg")
    assert package.scale(1) == 10 and package.DOUBLE_RUN(1) == 2


def test_import_of_the_bare_package_name_is_left_for_a_person(tree):
    original = b"import fxpkg.experimental.feat.kernels\n"
    tree.write({"fxpkg/__init__.py": original})
    result = tree.fix("EXP002", "fxpkg/__init__.py", 1)
    assert result.after == original
    assert [r for _, r in result.left] == [
        "'fxpkg' binds the package name 'fxpkg'; import the module under a name instead"
    ]


def test_generated_code_follows_the_modules_newlines_and_indentation(tree):
    tree.write({"fxpkg/__init__.py": b"from .experimental.feat.kernels import run\r\n\r\ndef __getattr__(n):\r\n\traise AttributeError(n)\r\n"})
    result = tree.fix("EXP002", "fxpkg/__init__.py", 1)
    assert result.after == (
        b"\r\n"
        b"def __getattr__(n):\r\n"
        b'\tif n == "run":\r\n'
        b"\t\tfrom .experimental.feat.kernels import run\r\n"
        b"\r\n"
        b"\t\treturn run\r\n"
        b"\traise AttributeError(n)\r\n"
        b"\r\n"
        b"\r\n"
        b"def __dir__():\r\n"
        b'\treturn sorted(set(globals()) | {"run"})\r\n'
    )
    assert write(tree.project, result)
    assert tree.imported("fxpkg").run(1) == 2
