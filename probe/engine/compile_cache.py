"""compile_cache=on: a restart of the same config loads its compiled decode functions from disk
instead of compiling them again.

torch 2.14 keeps inductor's FX graph cache on its own, but a restart still pays dynamo's
tracing and AOTAutograd before it can hit that cache (and `torch.compiler.save_cache_artifacts`
only carries those inductor/AOTAutograd entries). What skips tracing is dynamo's ahead-of-time
path: `torch.compile(fn, fullgraph=True).aot_compile((args, kwargs))` traces once into an
`AOTCompiledFunction` — bytecode, guards and the compiled graph — that
`save_compiled_function` writes and `torch.compiler.load_compiled_function` reads back without
tracing. That is the library's mechanism, used as is. What it does not do, written here:
- it compiles for one set of example inputs, so a function called with new shapes needs one
  artifact per shape and a dispatch between them (torch's AOTCompiledModel does this only for
  an nn.Module's forward; our steps are functions taking the model);
- it has no store: files are named by the digest of everything that changes the code
  (probe/engine/compile_cache_key.py), in infertop's state folder, each with a checksum, so a
  stale or corrupt file is recompiled (with one line in the log), never served;
- the C++ kernels an artifact calls are shared objects in inductor's cache folder; the cache
  points that folder into its own (unless TORCHINDUCTOR_CACHE_DIR names one), so a /tmp wiped
  at reboot does not turn a load into a full kernel compile.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Callable, Protocol

from probe.common.atomic import replace_atomically
from probe.engine.compile_cache_key import ConfigKey, call_signature
from probe.engine.state_files import state_dir

log = logging.getLogger(__name__)

CACHE_FOLDER = "compile-cache"
MAGIC = b"infertop compile cache 1\n"
_DIGEST_BYTES = 64          # sha256, hex


class CompileEvents(Protocol):
    """Where a cached compile reports itself (the engine's CompileProbe): dynamo's callbacks do
    not fire for aot_compile, and a load is no compile at all."""

    def external_compile(self, function: str, *, from_cache: bool,
                         reason: str | None = None) -> AbstractContextManager[None]: ...


class CorruptCacheFile(Exception):
    pass


def _serializable(entry: Any) -> bool:
    from torch._dynamo.guards import CheckFunctionManager
    unsupported = CheckFunctionManager.UNSUPPORTED_SERIALIZATION_GUARD_TYPES
    kinds = {entry.guard_type, *(entry.orig_guard.guard_types or ())}
    return not entry.is_global and not kinds.intersection(unsupported)


def serializable_guards(inner: Callable | None) -> Callable:
    """The guard_filter_fn an aot_compile needs: what `inner` keeps (guards=lean's filter, or
    all), less the guards that cannot be saved — every global one (the libraries' modules and
    builtins, which a restart re-imports) and those torch cannot serialize (ID_MATCH and kin).
    Written here because aot_compile's own default looks only at a guard's type, not at the
    types it derives (t5's BUILTIN_MATCH guards derive ID_MATCH), so saving t5's steps fails
    with "ID_MATCH guard cannot be serialized"."""
    def keep(entries: Any) -> list[bool]:
        kept = inner(entries) if inner is not None else [True] * len(entries)
        return [k and _serializable(e) for k, e in zip(kept, entries)]
    return keep


def cache_root() -> Path:
    return state_dir() / CACHE_FOLDER


def use_own_inductor_folder(root: Path) -> None:
    """Point inductor's cache (its kernels' shared objects) into ours, unless the user chose
    one: TORCHINDUCTOR_CACHE_DIR unset or torch's default (which torch writes back into the
    environment on first use)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    current = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if current is None or os.path.abspath(current) == os.path.abspath(default_cache_dir()):
        folder = root / "inductor"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)


# inductor's and AOTAutograd's on-disk caches, as torch counts their lookups in this process
CACHE_COUNTERS = (("inductor", "fxgraph_cache_hit"), ("inductor", "fxgraph_cache_miss"),
                  ("inductor", "fxgraph_cache_bypass"), ("aot_autograd", "autograd_cache_hit"),
                  ("aot_autograd", "autograd_cache_miss"),
                  ("aot_autograd", "autograd_cache_bypass"))


def share_inductor_cache() -> str:
    """One inductor folder for every run of a bench study and the studies after it: the FX
    graph and AOTAutograd caches (on in torch by default) then serve a graph compiled once to
    every later engine of the same config and shapes, and a /tmp wiped at reboot does not lose
    them. The user's TORCHINDUCTOR_CACHE_DIR is kept. Returns the folder used."""
    use_own_inductor_folder(cache_root())
    return os.environ["TORCHINDUCTOR_CACHE_DIR"]


def inductor_cache_counts() -> dict[str, int]:
    """How many lookups of inductor's FX graph cache and AOTAutograd's cache hit, missed or
    bypassed in this process so far (torch's own counters); a run's are the difference."""
    from torch._dynamo.utils import counters
    return {name: int(counters[group][name]) for group, name in CACHE_COUNTERS}


def write_entry(path: Path, payload: bytes) -> None:
    """MAGIC, the payload's sha256 and the payload, written whole or not at all."""
    digest = hashlib.sha256(payload).hexdigest().encode()

    def write(temporary: str) -> None:
        with open(temporary, "wb") as handle:
            handle.write(MAGIC + digest + b"\n" + payload)
            handle.flush()
            os.fsync(handle.fileno())
    replace_atomically(path, write)


def read_entry(path: Path) -> bytes:
    data = path.read_bytes()
    head = len(MAGIC) + _DIGEST_BYTES + 1
    if not data.startswith(MAGIC) or len(data) < head:
        raise CorruptCacheFile("not a compile cache file")
    digest, payload = data[len(MAGIC):head - 1], data[head:]
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        raise CorruptCacheFile("checksum mismatch")
    return payload


class ConfigStore:
    """One config's folder: key.json (what the digest covers) and one file per function and
    call signature."""

    def __init__(self, key: ConfigKey, root: Path | None = None) -> None:
        self.key = key
        self.folder = (root or cache_root()) / key.digest
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        meta = self.folder / "key.json"
        if not meta.exists():
            write_entry(meta, json.dumps(key.fields, sort_keys=True, default=str).encode())

    def path(self, function: str, signature: str) -> Path:
        return self.folder / f"{function}-{signature}.bin"


class CachedCompile:
    """A fullgraph-compiled function whose compiled code per call signature comes from the
    store when it is there and valid, else from aot_compile (then saved). If the function cannot
    be compiled ahead of time (a backend whose output does not serialize, a guard that cannot be
    saved), it says so once in the log and runs through plain torch.compile from then on."""

    def __init__(self, fn: Callable, compiled: Any, store: ConfigStore,
                 events: CompileEvents | None = None) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.compiled = compiled          # torch.compile(fn, fullgraph=True, ...)
        self.store = store
        self.events = events
        self._entries: dict[str, Any] = {}       # call signature → its artifact
        self._recent: list[Any] = []              # the same artifacts, last used first
        self._plain = False

    def __call__(self, *args: Any) -> Any:
        if self._plain:
            return self.compiled(*args)
        # Dispatch by the artifacts' own guards (shapes, dtypes, strides of every tensor), most
        # recent first, as torch's AOTCompiledModel does: the signature digest below walks
        # every argument and is paid only when no artifact fits.
        for index, entry in enumerate(self._recent):
            if entry.guard_check(*args):
                if index:
                    self._recent.insert(0, self._recent.pop(index))
                return entry(*args)
        signature = call_signature(args)
        entry = self._obtain(signature, args, stale_in_memory=signature in self._entries)
        if entry is None:
            return self.compiled(*args)
        previous = self._entries.get(signature)
        if previous is not None:
            self._recent.remove(previous)
        self._entries[signature] = entry
        self._recent.insert(0, entry)
        return entry(*args)

    def _event(self, from_cache: bool, reason: str | None) -> AbstractContextManager[None]:
        if self.events is None:
            return nullcontext()
        return self.events.external_compile(self.name, from_cache=from_cache, reason=reason)

    def _obtain(self, signature: str, args: tuple, *, stale_in_memory: bool) -> Any:
        path = self.store.path(self.name, signature)
        if path.exists() and not stale_in_memory:
            started = time.perf_counter()
            with self._event(True, None):
                loaded = self._load(path, args)
            if loaded is not None:
                log.info("compile cache: %s loaded from %s in %.2f s", self.name, path.name,
                         time.perf_counter() - started)
                return loaded
        reason = "new shapes" if self._entries else None
        try:
            with self._event(False, reason):
                compiled = self.compiled.aot_compile((args, {}))
        except Exception as exc:  # not serializable here: torch.compile as usual, said once
            self._plain = True
            log.warning("compile cache: %s cannot be compiled ahead of time (%s: %s); "
                        "compiling it as usual, uncached", self.name, type(exc).__name__,
                        " ".join(str(exc).split())[:200])
            return None
        try:
            write_entry(path, type(compiled).serialize(compiled).serialized_data)
        except Exception as exc:  # a cache that cannot be written costs the next start only
            log.warning("compile cache: could not save %s (%s: %s)", self.name,
                        type(exc).__name__, " ".join(str(exc).split())[:200])
        compiled.disable_guard_check()      # __call__ checks the guards itself
        return compiled

    def _load(self, path: Path, args: tuple) -> Any:
        import torch
        try:
            payload = read_entry(path)
            loaded: Any = torch.compiler.load_compiled_function(io.BytesIO(payload),
                                                                f_globals=self.fn.__globals__)
            valid = loaded.guard_check(*args)
        except Exception as exc:  # corrupt, or written by another torch: recompile
            log.warning("compile cache: %s is unusable (%s: %s); recompiling", path,
                        type(exc).__name__, " ".join(str(exc).split())[:160])
            return None
        if not valid:
            log.warning("compile cache: %s is stale (its guards fail on these arguments); "
                        "recompiling", path)
            return None
        loaded.disable_guard_check()
        return loaded
