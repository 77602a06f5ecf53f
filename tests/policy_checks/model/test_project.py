"""The project model: module names, excludes, cross-module resolution."""

from __future__ import annotations

from policy_checks.model.config import Settings
from policy_checks.model.facts import extract
from policy_checks.model.project import Project, module_name

from ..conftest import write_tree


def test_module_names():
    assert module_name("flashinfer/gemm.py") == ("flashinfer.gemm", False)
    assert module_name("flashinfer/ops/__init__.py") == ("flashinfer.ops", True)
    assert module_name("tests/x/test_y.py") == ("tests.x.test_y", False)


def test_excludes(tmp_path):
    """A plain pattern excludes its path and everything below it (not a sibling that
    shares its prefix); a glob matches the path or one of its parent directories."""
    files = ["flashinfer/__init__.py", "flashinfer/data/cutlass/x.py", "flashinfer/database.py",
             "flashinfer/a/gen_b.py", "flashinfer/a/b.py", "flashinfer/build/x.py",
             "flashinfer/deep/generated/x.py", "flashinfer/deep/kept.py"]
    root = write_tree(tmp_path, dict.fromkeys(files, ""))
    settings = Settings(exclude=("flashinfer/data", "*/gen_*.py", "/flashinfer/build/", "flashinfer/*/generated"))
    project = Project(root, settings, load_facts=None)
    assert sorted(project.files) == ["flashinfer/__init__.py", "flashinfer/a/b.py", "flashinfer/database.py",
                                     "flashinfer/deep/kept.py"]


def _project(tmp_path, files):
    root = write_tree(tmp_path, files)

    def load(source):
        return extract((root / source.rel).read_bytes(), source.module, source.is_package)

    return Project(root, Settings(), load)


def test_resolution_follows_re_exports_and_lazy_exports(tmp_path):
    project = _project(tmp_path, {
        "flashinfer/__init__.py": (
            "from .norm import fast as fused\nfrom . import norm\nimport flashinfer.norm as nm\n"
            "_LAZY = {'fast': 'norm'}\ndef __getattr__(name):\n    pass\n"
        ),
        "flashinfer/norm.py": "from .impl.core import fast\nclass K:\n    def m(self):\n        pass\n",
        "flashinfer/impl/__init__.py": "",
        "flashinfer/impl/core.py": "def fast():\n    pass\n",
        "flashinfer/data/skipped.py": "",
    })
    assert "flashinfer/data/skipped.py" not in project.files
    kind, module, definition = project.resolve("flashinfer", "fused")
    assert (kind, module, definition.qualname) == ("def", "flashinfer.impl.core", "fast")
    assert project.resolve("flashinfer", "norm.fast")[1] == "flashinfer.impl.core"
    assert project.resolve("flashinfer", "nm.K.m")[2].qualname == "K.m"
    assert project.resolve("flashinfer", "fast")[1] == "flashinfer.impl.core"
    assert project.resolve("flashinfer", "impl") == ("module", "flashinfer.impl")
    assert project.resolve("flashinfer", "missing")[0] == "external"


def test_resolution_survives_import_cycles(tmp_path):
    project = _project(tmp_path, {
        "flashinfer/__init__.py": "",
        "flashinfer/a.py": "from .b import x\n",
        "flashinfer/b.py": "from .a import x\n",
    })
    assert project.resolve("flashinfer.a", "x")[0] == "external"


def test_from_package_import_subpackage_is_an_import_of_the_subpackage(tmp_path):
    project = _project(tmp_path, {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/feat/__init__.py": "",
        "flashinfer/gemm.py": "from flashinfer.experimental import feat, experimental_backend\n",
    })
    (imp,) = project.facts("flashinfer/gemm.py").imports
    assert project.import_targets(imp) == ["flashinfer.experimental", "flashinfer.experimental.feat"]


def test_decorators_are_followed_through_aliases_in_other_modules(tmp_path):
    project = _project(tmp_path, {
        "flashinfer/__init__.py": "",
        "flashinfer/markers.py": "from .api_logging import flashinfer_experimental_api\nexp_api = flashinfer_experimental_api\n",
        "flashinfer/norm.py": "from .markers import exp_api\n@exp_api\ndef fast():\n    pass\ndef plain():\n    pass\n",
    })
    facts = project.facts("flashinfer/norm.py")
    assert project.decorated_with("flashinfer.norm", facts.definitions["fast"], "flashinfer_experimental_api")
    assert not project.decorated_with("flashinfer.norm", facts.definitions["plain"], "flashinfer_experimental_api")
    assert project.resolve_absolute("flashinfer.norm.fast")[2].qualname == "fast"
    assert project.resolve_absolute("numpy.linalg") is None


def test_an_attribute_of_a_definition_is_its_method_or_unknown(tmp_path):
    """``Cls.method`` resolves to the method; an attribute no definition holds (an
    inherited method, an attribute set on a function) is not the class or the function
    itself, which the import-time analysis would then follow as a construction or a call."""
    project = _project(tmp_path, {
        "flashinfer/__init__.py": "",
        "flashinfer/gemm.py": "class Runner:\n    def go(self):\n        pass\ndef plan():\n    pass\n",
    })
    assert project.resolve("flashinfer.gemm", "Runner.go").definition.qualname == "Runner.go"
    for name in ("Runner.inherited", "plan.cache_clear"):
        target = project.resolve("flashinfer.gemm", name)
        assert target.tag == "external" and target.name == f"flashinfer.gemm.{name}", target
