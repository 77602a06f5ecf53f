"""Graduation keeps modules importing where the track's runtime and the stable one
differ: a read of ``f.__wrapped__`` (the experimental decorator wraps, ``@flashinfer_api``
may not) and a lazily exporting package (its shim must not load every lazy name)."""

from __future__ import annotations

import warnings

from policy_checks.lifecycle.graduate.wrapped import unwrap_reads

from .test_graduate_invariants import graduate_checked

WRAPPING_API_LOGGING = """\
    import functools


    def flashinfer_api(func=None, *, trace=None):
        return func if func is not None else (lambda f: f)


    def flashinfer_experimental_api(func=None, *, trace=None, feature=None):
        if func is None:
            return lambda f: flashinfer_experimental_api(f)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)

        wrapper.is_experimental = True
        return wrapper
    """


def test_a_read_of_wrapped_keeps_the_module_importing(tree):
    tree.write({
        "fxpkg/api_logging.py": WRAPPING_API_LOGGING,
        "fxpkg/ops.py": """\
            import inspect

            from .api_logging import flashinfer_experimental_api


            def _shape(x, y=2):
                pass


            @flashinfer_experimental_api(feature="feat")
            def fancy(*args, **kwargs):
                from .experimental.feat.kernels import run

                return run(*args)


            fancy.__wrapped__.__signature__ = inspect.signature(_shape)
            """,
    })
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert 'getattr(fancy, "__wrapped__", fancy).__signature__ = inspect.signature(_shape)' in ops
    assert "fxpkg/ops.py:17: `fancy.__wrapped__` reads" in result.output
    module = tree.imported("fxpkg.ops")  # AttributeError without the edit: @flashinfer_api wraps nothing here
    assert str(__import__("inspect").signature(module.fancy)) == "(x, y=2)"


def test_unwrap_reads_edits_plain_reads_of_the_swapped_names_only():
    data = (b"f.__wrapped__.x = 1\n"        # a read (the attribute set is on what it returns)
            b"g.__wrapped__.y = 2\n"        # not swapped
            b"f.__wrapped__ = h\n"          # a write: left as it is
            b"z = (f) .__wrapped__\n")      # another spelling: listed
    after, done, left = unwrap_reads(data, {"f"})
    assert after == (b'getattr(f, "__wrapped__", f).x = 1\n'
                     b"g.__wrapped__.y = 2\n"
                     b"f.__wrapped__ = h\n"
                     b"z = (f) .__wrapped__\n")
    assert done == [(1, "f")] and left == [(4, "f")]
    assert unwrap_reads(b"x = 1\n", {"f"}) == (b"x = 1\n", [], [])


def test_a_lazily_exporting_package_keeps_its_old_path_importing(tree):
    """The package serves `Plan` from a submodule on first use, and lists `Missing`, whose
    module does not exist (a trimmed wheel): a star import in the shim would load both."""
    tree.write({
        "fxpkg/experimental/feat/__init__.py": """\
            import importlib

            __all__ = ["Plan", "Missing"]
            _LAZY = {"Plan": ".plan", "Missing": ".missing"}


            def __getattr__(name):
                if name in _LAZY:
                    return getattr(importlib.import_module(_LAZY[name], __name__), name)
                raise AttributeError(name)
            """,
        "fxpkg/experimental/feat/plan.py": "class Plan:\n    pass\n",
        "fxpkg/ops.py": """\
            from .api_logging import flashinfer_experimental_api


            @flashinfer_experimental_api(feature="feat")
            def fancy(x):
                from .experimental.feat.kernels import run

                return run(x)
            """,
    })
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    shim = tree.read("fxpkg/experimental/feat/__init__.py").decode()
    assert "import *" not in shim and "__all__ = ['Plan', 'Missing']" in shim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = tree.imported("fxpkg.experimental.feat")  # ModuleNotFoundError with a star import
        assert old.Plan is tree.imported("fxpkg.fancy_ops.plan").Plan
