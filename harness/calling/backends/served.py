"""What a server says it serves, as the response-cache key's name for the server (issue 42).

The cache key names a --base-url server by its address (backend.describe() `base_urls`), so the same model behind
another port was a new keyspace: a timing pass against one llama.cpp server and the run against another gave 0 hits.
An address is no name for a model either: llama.cpp's server answers whatever `model` a request names, so the same
port restarted with another GGUF answered from the first one's cache. Where a server says what decides its
answers, that stands for its address: llama.cpp's GET /props names the model file it loaded, its chat template
and special tokens, the sampling defaults a request does not override (its command line's) and its build. Servers
that say less keep their address in the key: vLLM's /v1/models `root` and any server's model `id` name the
weights but not how they are run (vLLM's --dtype, --quantization, --chat-template), and a proxy's names are
whatever it maps them to, so two servers reporting the same name may answer differently and the cache could not
tell them apart. What llama.cpp does not report (its KV-cache type, flash attention, RoPE or metadata overrides,
--chat-template-kwargs, the slots' batching) is in neither key, as it never was. Its embeddings keep the address:
/props does not say how the server pools (--pooling), and that decides the vectors (embeddings.py).
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import yarl

# The entries of llama.cpp's /props that decide an answer beyond the request; `total_slots`, `n_ctx` per slot, the
# alias (the requested `model` is in the key already), the web UI's settings and live state are left out, so
# that one model file behind another --parallel or port is the same server.
LLAMA_CPP = ("model_path", "model_ftype", "chat_template", "chat_template_caps", "bos_token", "eos_token", "build_info")
MAX_PROPS = 256 * 1024  # characters of the entries kept: more is no server's self-description, not read


def host_class(base_url: str) -> str:
    """Where the server runs, without its port: "loopback" for this machine under any of its names (localhost,
    127.0.0.1, ::1), else the host name (the same file path on two machines may hold two files)."""
    host = (yarl.URL(base_url).host or "").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return "loopback"
    try:
        return "loopback" if ipaddress.ip_address(host.strip("[]")).is_loopback else host
    except ValueError:
        return host


def served_identity(props: dict[str, Any] | None, base_url: str) -> dict[str, Any] | None:
    """llama.cpp's /props reduced to what decides its answers, with the host class; None for a reply that does not
    name a model file (another server, or an older llama.cpp)."""
    if props is None or not isinstance(props.get("model_path"), str) or not props["model_path"]:
        return None
    settings = props.get("default_generation_settings")
    params = settings.get("params") if isinstance(settings, dict) else None
    kept = {k: props[k] for k in LLAMA_CPP if k in props} | {"defaults": params if isinstance(params, dict) else None}
    try:  # the key encodes it as JSON: a depth or size no server's description has is not read
        if len(json.dumps(kept, default=str)) > MAX_PROPS:
            return None
    except (RecursionError, ValueError):
        return None
    return {"host": host_class(base_url), "llama.cpp": kept}
