"""The JIT disk cache: misses, hits, keys, corrupt entries, atomic and concurrent writes,
entries bound to their key."""

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flashinfer.jit import JitSpec, cache
from flashinfer.jit.elf import function_symbols

REPO = Path(__file__).resolve().parents[3]
SOURCE = 'extern "C" __global__ void add_one(float* x) { x[threadIdx.x] += 1.f; }'


KEY = hashlib.sha256(b"some spec").hexdigest()
OTHER_KEY = hashlib.sha256(b"another spec").hexdigest()


def make_spec(tag: str = "") -> JitSpec:
    return JitSpec("add_one", SOURCE + f"\n// {tag}\n", ["add_one"])


@pytest.fixture
def compile_count(monkeypatch):
    """Counts NVRTC compilations done by the cache."""
    calls = []
    real = cache.compile_spec

    def counting(spec, arch, *args):
        calls.append((spec.name, arch))
        return real(spec, arch, *args)

    monkeypatch.setattr(cache, "compile_spec", counting)
    return calls


def test_default_directory_is_under_the_home_cache(monkeypatch):
    monkeypatch.delenv(cache.CACHE_DIR_ENV_VAR)
    assert cache.cache_dir() == Path.home() / ".cache" / "flashinfer" / "jit"


def test_miss_compiles_then_memory_then_disk(jit_cache_dir, compile_count):
    spec = make_spec()
    first = cache.build(spec, 90)
    assert first.origin == "compiled" and first.kind == "cubin"
    assert first.path.parent == jit_cache_dir and first.path.exists()
    assert cache.build(spec, 90).origin == "memory"
    cache.clear_memo()
    from_disk = cache.build(spec, 90)
    assert from_disk.origin == "disk" and from_disk.image == first.image
    assert compile_count == [("add_one", 90)]
    assert "add_one" in function_symbols(from_disk.image)


def test_key_covers_arch_content_nvrtc_and_package_versions(monkeypatch):
    spec = make_spec()
    keys = {cache.cache_key(spec, 90), cache.cache_key(spec, 80), cache.cache_key(make_spec("v2"), 90)}
    monkeypatch.setattr(cache, "nvrtc_version", lambda: (99, 9))
    keys.add(cache.cache_key(spec, 90))
    monkeypatch.setattr(cache, "_package_version", lambda: "99.0")
    keys.add(cache.cache_key(spec, 90))
    assert len(keys) == 5


@pytest.mark.parametrize("damage", ["flip_payload_byte", "truncate", "garbage"])
def test_corrupt_entry_is_rebuilt_not_loaded(damage, compile_count, caplog):
    spec = make_spec()
    good = cache.build(spec, 90)
    data = bytearray(good.path.read_bytes())
    if damage == "flip_payload_byte":
        data[-100] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = bytearray(b"not a cache entry")
    good.path.write_bytes(bytes(data))
    cache.clear_memo()
    rebuilt = cache.build(spec, 90)
    assert rebuilt.origin == "compiled" and rebuilt.image == good.image
    assert cache.decode_entry(rebuilt.path.read_bytes(), cache.cache_key(spec, 90)) == ("cubin", good.image)
    assert len(compile_count) == 2
    assert "corrupt" in caplog.text


def test_writes_leave_no_temporary_files(jit_cache_dir):
    for tag in ("a", "b", "c"):
        cache.build(make_spec(tag), 90)
    names = sorted(p.name for p in jit_cache_dir.iterdir())
    assert len(names) == 3 and not any(n.endswith(".tmp") for n in names)


def test_failed_write_removes_its_temporary_file(tmp_path, monkeypatch):
    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(cache.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        cache.write_atomically(tmp_path / "entry.bin", b"payload")
    assert list(tmp_path.iterdir()) == []


WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from flashinfer.jit import JitSpec, cache
    go = Path(sys.argv[1])
    while not go.exists():
        time.sleep(0.001)
    spec = JitSpec("race", sys.argv[2], ["add_one"])
    result = cache.build(spec, 90)
    print(result.origin, result.path)
    """
)


def test_two_processes_compiling_the_same_spec_both_succeed(jit_cache_dir, tmp_path):
    go = tmp_path / "go"
    source = SOURCE + "\n// race test\n"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(go), source], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (stdout, stderr) in zip(procs, outputs):
        assert proc.returncode == 0, stderr
    origins = sorted(out.split(" ", 1)[0] for out, _ in outputs)
    assert origins in (["compiled", "compiled"], ["compiled", "disk"])
    paths = {out.split(" ", 1)[1].strip() for out, _ in outputs}
    assert len(paths) == 1
    entries = list(jit_cache_dir.iterdir())
    assert [p.name for p in entries] == [Path(paths.pop()).name]
    kind, image = cache.decode_entry(entries[0].read_bytes())
    assert kind == "cubin" and "add_one" in function_symbols(image)


@given(image=st.binary(min_size=1, max_size=512), kind=st.sampled_from(["cubin", "ptx"]), data=st.data())
@settings(max_examples=200, deadline=None)
def test_entry_round_trips_and_any_single_byte_change_is_caught(image, kind, data):
    entry = cache.encode_entry(kind, image, KEY)
    assert cache.decode_entry(entry, KEY) == cache.decode_entry(entry) == (kind, image)
    position = data.draw(st.integers(0, len(entry) - 1))
    flip = data.draw(st.integers(1, 255))
    damaged = bytearray(entry)
    damaged[position] ^= flip
    assert cache.decode_entry(bytes(damaged), KEY) is None
    assert cache.decode_entry(bytes(damaged)) is None  # the recorded key is covered by the checksum too


def test_kind_tag_is_covered_by_the_checksum():
    entry = bytearray(cache.encode_entry("cubin", b"image", KEY))
    entry[len(cache._MAGIC)] = ord("P")  # a valid tag, but not the one that was written
    assert cache.decode_entry(bytes(entry), KEY) is None


# -- an entry is bound to its key ---------------------------------------------------
# The checksum proves an entry is whole, not whose it is: anyone who can rename files
# in the cache directory could move a valid entry of spec B (ours, so it passes the
# owner check) onto spec A's file name. The header records the full key, and a read
# checks it against the key it looked the entry up under.


def test_an_entry_decodes_only_under_the_key_it_was_written_for():
    entry = cache.encode_entry("cubin", b"image", KEY)
    assert cache.decode_entry(entry, KEY) == ("cubin", b"image")
    assert cache.decode_entry(entry, KEY.upper()) == ("cubin", b"image")  # the same key, spelt in capitals
    assert cache.decode_entry(entry, OTHER_KEY) is None
    with pytest.raises(ValueError):
        cache.encode_entry("cubin", b"image", KEY[:32])  # a file-name prefix is not a key


def _swap_in(victim: Path, planted: Path) -> None:
    """What a co-user who can write the directory does: replace ``victim`` by a copy
    of ``planted`` (a rename would do as well), keeping it ours and 0644."""
    shutil.copyfile(planted, victim)
    os.chmod(victim, 0o644)


def test_a_renamed_entry_of_another_spec_is_a_miss(jit_cache_dir, compile_count, caplog):
    """Spec B's valid entry put under spec A's file name: spec A's own image is
    compiled and replaces it, spec B's is never returned."""
    spec_a = make_spec("a")
    spec_b = JitSpec("add_two", 'extern "C" __global__ void add_two(float* x) { x[threadIdx.x] += 2.f; }', ["add_two"])
    b = cache.build(spec_b, 90)
    victim = cache.entry_path(spec_a, 90)
    victim.parent.mkdir(parents=True, exist_ok=True)
    _swap_in(victim, b.path)
    assert cache.decode_entry(victim.read_bytes()) == ("cubin", b.image)  # whole and valid, just not A's
    cache.clear_memo()
    a = cache.build(spec_a, 90)
    assert a.origin == "compiled" and a.path == victim and a.image != b.image
    assert "add_one" in function_symbols(a.image) and "add_two" not in function_symbols(a.image)
    assert "written under another key" in caplog.text
    assert cache.decode_entry(victim.read_bytes(), cache.cache_key(spec_a, 90)) == ("cubin", a.image)
    assert compile_count == [("add_two", 90), ("add_one", 90)]
    cache.clear_memo()  # the replacement is A's: the next process loads it
    assert cache.build(spec_a, 90).origin == "disk"


def test_an_entry_of_the_same_spec_for_another_arch_is_a_miss(jit_cache_dir, compile_count):
    """The key covers the architecture: an sm_80 image renamed onto the sm_90 name is
    not loaded for sm_90."""
    spec = make_spec()
    sm80 = cache.build(spec, 80)
    victim = cache.entry_path(spec, 90)
    _swap_in(victim, sm80.path)
    cache.clear_memo()
    sm90 = cache.build(spec, 90)
    assert sm90.origin == "compiled" and sm90.image != sm80.image
    assert compile_count == [("add_one", 80), ("add_one", 90)]


def test_an_entry_in_the_old_keyless_format_is_a_miss(jit_cache_dir, compile_count, caplog):
    spec = make_spec()
    good = cache.build(spec, 90)
    tag = b"C"
    good.path.write_bytes(b"FIJIT1" + tag + hashlib.sha256(tag + good.image).digest() + good.image)
    cache.clear_memo()
    rebuilt = cache.build(spec, 90)
    assert rebuilt.origin == "compiled" and rebuilt.image == good.image
    assert "older format" in caplog.text
    assert cache.decode_entry(rebuilt.path.read_bytes(), cache.cache_key(spec, 90)) == ("cubin", good.image)


class _FakeDriver:
    """Stands in for ``cuda.bindings.driver``: records the images given to the loader."""

    def __init__(self):
        self.loaded = []

    def cuModuleLoadData(self, image):
        self.loaded.append(bytes(image))
        return 0, object()

    def cuModuleGetFunction(self, module, name):
        return 0, name


def test_an_entry_under_a_foreign_key_never_reaches_the_launcher(jit_cache_dir, monkeypatch):
    """The loader (``get_kernel``) is handed spec A's own image, never the planted
    one; the driver is faked, so this runs without a GPU."""
    torch = pytest.importorskip("torch")
    from flashinfer.jit import launch

    spec_a = make_spec("launched")
    spec_b = JitSpec("add_two", 'extern "C" __global__ void add_two(float* x) { x[threadIdx.x] += 2.f; }', ["add_two"])
    planted = cache.build(spec_b, 90)
    victim = cache.entry_path(spec_a, 90)
    _swap_in(victim, planted.path)
    cache.clear_memo()
    driver = _FakeDriver()
    monkeypatch.setattr(launch, "_driver", lambda: driver)
    monkeypatch.setattr(launch, "device_arch", lambda device: 90)
    monkeypatch.setattr(launch, "_context_of", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(launch, "_kernels", {})
    monkeypatch.setattr(launch, "_modules", {})
    kernel = launch.get_kernel(spec_a, "add_one", torch.device("cuda", 0))
    assert kernel.name == "add_one"
    assert len(driver.loaded) == 1 and planted.image not in driver.loaded
    assert "add_one" in function_symbols(driver.loaded[0])


def _gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(not _gpu_available(), reason="needs a CUDA GPU")
def test_a_renamed_entry_on_the_gpu_runs_the_right_kernel(jit_cache_dir):
    """Spec B's entry (adds 2) planted under spec A's name (adds 1): the kernel that
    runs is A's."""
    import torch

    from flashinfer.jit import get_kernel
    from flashinfer.jit.launch import device_arch

    arch = device_arch(torch.device("cuda"))
    body = 'extern "C" __global__ void bump(float* x) {{ x[threadIdx.x] += {}.f; }}'
    spec_a = JitSpec("bump_renamed_a", body.format(1), ["bump"])
    spec_b = JitSpec("bump_renamed_b", body.format(2), ["bump"])
    planted = cache.build(spec_b, arch)
    _swap_in(cache.entry_path(spec_a, arch), planted.path)
    cache.clear_memo()
    x = torch.zeros(32, device="cuda")
    get_kernel(spec_a, "bump", x.device).launch((1,), (32,), [x])
    torch.cuda.synchronize()
    assert (x == 1.0).all()


# -- a shared cache directory: only our own regular files are loaded -----------------
# FLASHINFER_JIT_CACHE_DIR may name a directory others can write to. An entry that
# is not a regular file of ours, or that others could have written, is a miss: it
# is rebuilt and replaced, never loaded. The timeout marks only turn a hang (a
# blocking open of a FIFO) into a failure.

as_root = pytest.mark.skipif(getattr(os, "geteuid", lambda: -1)() != 0, reason="chown to another user needs root")


def test_directories_the_cache_creates_are_private(tmp_path, monkeypatch):
    os.chmod(tmp_path, 0o755)
    root = tmp_path / "shared" / "jit"
    monkeypatch.setenv(cache.CACHE_DIR_ENV_VAR, str(root))
    cache.build(make_spec(), 90)
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o700
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755  # an existing directory is left alone


def _plant(kind, path, untrusted_file, monkeypatch):
    """Turn the good entry at ``path`` into what ``kind`` names."""
    if kind in ("fifo", "dev-zero"):
        path.unlink()
        untrusted_file(kind, path)
    elif kind == "symlink":
        elsewhere = path.parent.parent / "elsewhere.bin"
        elsewhere.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(elsewhere)
    elif kind == "world-writable":
        os.chmod(path, 0o666)
    elif kind == "group-writable":
        os.chmod(path, 0o664)
    elif kind == "another-user":
        os.chown(path, 54321, -1)
    elif kind == "too-large":
        monkeypatch.setattr(cache, "MAX_ENTRY_BYTES", path.stat().st_size - 1)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "kind",
    [
        "fifo",
        "dev-zero",
        "symlink",
        "world-writable",
        "group-writable",
        pytest.param("another-user", marks=as_root),
        "too-large",
    ],
)
def test_untrusted_entry_is_rebuilt_not_loaded(kind, jit_cache_dir, compile_count, untrusted_file, monkeypatch, caplog):
    spec = make_spec()
    good = cache.build(spec, 90)
    planted = good.path.read_bytes()
    _plant(kind, good.path, untrusted_file, monkeypatch)
    cache.clear_memo()
    rebuilt = cache.build(spec, 90)
    assert rebuilt.origin == "compiled" and rebuilt.image == good.image
    assert len(compile_count) == 2
    assert "not loaded" in caplog.text
    info = os.lstat(good.path)  # the rebuilt entry replaced what was planted
    assert stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()
    assert stat.S_IMODE(info.st_mode) == 0o644
    if kind == "symlink":  # replaced the link, not written through it
        assert (jit_cache_dir.parent / "elsewhere.bin").read_bytes() == planted
    if kind != "too-large":  # the replacement is ours: the next process loads it
        cache.clear_memo()
        assert cache.build(spec, 90).origin == "disk"
