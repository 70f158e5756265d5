"""Where a measurement comes from: the code (commit, dirty tree, a digest of the code files), the processor and
the cores this process may use. Every run record's `environment` and every benchmark summary carries these
fields, so no table puts two machines or two versions of the code side by side unnoticed. TensorFlow-free.

Two commits count as the same code when they differ only in results/, docs/ and *.md files: `code_digest`
hashes every other file git tracks, as it is in the working tree, so comparing two records needs no repository.
"""

import functools
import hashlib
import os
import platform
import subprocess
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What a change may touch without changing the code that is measured.
NOT_CODE = ("results/", "docs/", "runs/")
UNKNOWN = "unknown"


def _git(*args: str) -> Optional[str]:
  """The output of `git <args>` run in the repository, trailing whitespace removed (leading kept: the first line of
  `git status --porcelain` starts with its status column), or None outside a git checkout."""
  try:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
  except (OSError, subprocess.TimeoutExpired):
    return None
  return done.stdout.rstrip() if done.returncode == 0 else None


def _is_code(path: str) -> bool:
  return not path.startswith(NOT_CODE) and not path.endswith(".md")


@functools.lru_cache(maxsize=None)
def commit() -> str:
  """The 40-hex commit of HEAD, or "unknown" outside a git checkout."""
  head = _git("rev-parse", "HEAD")
  return head if head and len(head) == 40 else UNKNOWN


@functools.lru_cache(maxsize=None)
def dirty() -> Optional[bool]:
  """True when a code file (not results/, docs/, runs/ or *.md) differs from HEAD or is untracked and not
  ignored; None outside a git checkout."""
  status = _git("status", "--porcelain", "--untracked-files=all")
  return None if status is None else status_has_code(status)


def status_has_code(porcelain: str) -> bool:
  """Whether `git status --porcelain` output (lines "XY path" or "XY old -> new") names a code file."""
  return any(_is_code(line[3:].split(" -> ")[-1].strip('"')) for line in porcelain.splitlines() if line.strip())


def _code_files() -> List[str]:
  listed = _git("ls-files", "--cached", "--others", "--exclude-standard")
  if listed is not None:
    return sorted(p for p in listed.splitlines() if _is_code(p) and os.path.isfile(os.path.join(ROOT, p)))
  found = []
  for folder, dirs, files in os.walk(ROOT):
    dirs[:] = [d for d in dirs if not d.startswith(".")]
    found += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files]
  return sorted(p for p in found if _is_code(p) and not p.endswith((".pyc", ".json", ".png", ".npz")))


@functools.lru_cache(maxsize=None)
def code_digest() -> str:
  """sha256 (first 16 hex digits) of the code as it is in the working tree: every file but results/, docs/,
  runs/ and *.md, by path and content. Equal digests: the same code, whatever the commits say."""
  h = hashlib.sha256()
  for path in _code_files():
    h.update(path.encode() + b"\0")
    with open(os.path.join(ROOT, path), "rb") as f:
      h.update(hashlib.sha256(f.read()).digest())
  return h.hexdigest()[:16]


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
  """The processor's name, e.g. "AMD EPYC" (Linux: the first "model name" of `cpuinfo`), or "unknown".

  Two machines with the same core count and host name can differ several-fold in speed (the project's VMs
  do), so every record names its processor.
  """
  try:
    with open(cpuinfo) as f:
      for line in f:
        if line.startswith("model name"):
          return line.split(":", 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or UNKNOWN


# The processor features that decide the speed of the matrix products (float32 and bfloat16 kernels), as
# /proc/cpuinfo names them: x86 "flags", aarch64 "Features".
DECISIVE_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve",
                  "bf16", "i8mm")


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> List[str]:
  """The `DECISIVE_FLAGS` the processor lists (first "flags" or "Features" line of `cpuinfo`), in that order; [] when
  unreadable. A bfloat16 speedup means nothing without them: AMX runs bfloat16 products ~4x float32, AVX-512 BF16
  ~1.7x (docs/design.md, "Mixed precision")."""
  listed = set(read_cpu_flags(cpuinfo)[1])
  return [flag for flag in DECISIVE_FLAGS if flag in listed]


# x86 CPU flags of native bfloat16 arithmetic (AVX-512 BF16, AMX BF16); aarch64's feature is "bf16".
BFLOAT16_X86_FLAGS = ("avx512_bf16", "amx_bf16")
BFLOAT16_ARM_FEATURE = "bf16"


def read_cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> Tuple[str, Sequence[str]]:
  """(machine, CPU flags): `platform.machine()` and the "flags" (x86) or "Features" (aarch64) of the first
  processor in `cpuinfo`; no flags when the file cannot be read."""
  try:
    with open(cpuinfo) as f:
      for line in f:
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
          return platform.machine(), value.split()
  except OSError:
    pass
  return platform.machine(), ()


def native_cpu_bfloat16(machine: str, flags: Sequence[str]) -> Optional[str]:
  """The CPU flag that gives native bfloat16 arithmetic (e.g. "avx512_bf16"), or None."""
  wanted = (BFLOAT16_ARM_FEATURE,) if machine in ("aarch64", "arm64") else BFLOAT16_X86_FLAGS
  return next((flag for flag in wanted if flag in flags), None)


def instruction_set(flags: Optional[List[str]]) -> Optional[str]:
  """The class of a processor's matrix-product instructions as tables name it: "AMX", "AVX-512 BF16", "AVX-512",
  "AVX2", "NEON BF16" (aarch64 bf16), "NEON", "older", or None when the flags were not recorded."""
  if flags is None:
    return None
  for flag, name in (("amx_bf16", "AMX"), ("avx512_bf16", "AVX-512 BF16"), ("avx512f", "AVX-512"), ("avx2", "AVX2"),
                     ("bf16", "NEON BF16"), ("asimd", "NEON")):
    if flag in flags:
      return name
  return "older"


def usable_cores() -> int:
  """The cores this process may run on: its CPU affinity (`taskset`, cgroups' cpusets), else os.cpu_count()."""
  try:
    return len(os.sched_getaffinity(0))
  except (AttributeError, OSError):
    return os.cpu_count() or 1


@functools.lru_cache(maxsize=None)
def machine_id() -> Optional[str]:
  """The identity of this machine as it runs now: 12 hex digits of the SHA-256 of /etc/machine-id and the kernel's boot
  id, so two virtual machines of one processor class (or one machine before and after a reboot) are told apart, and
  nothing of either file is disclosed. None where neither file can be read."""
  parts = []
  for path in ("/etc/machine-id", "/proc/sys/kernel/random/boot_id"):
    try:
      with open(path) as f:
        parts.append(f.read().strip())
    except OSError:
      parts.append("")
  return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12] if any(parts) else None


def fields() -> Dict[str, object]:
  """The provenance every record and benchmark summary carries: {"commit", "commit_dirty", "code_digest",
  "cpu_model", "cpu_flags" (the instruction set, `cpu_flags`), "usable_cores", "machine_id" (`machine_id`)}."""
  return {"commit": commit(), "commit_dirty": dirty(), "code_digest": code_digest(), "cpu_model": cpu_model(),
          "cpu_flags": cpu_flags(), "usable_cores": usable_cores(), "machine_id": machine_id()}
