"""One LLM client for every paper: local GGUF (xllamacpp), OpenAI-compatible HTTP,
local transformers, and replay from a committed, append-only response cache.

    from toolkit.llm import get_client, Sampling, prompts, parsers
    llm = get_client("qwen-1.5b", namespace="reinvoke_intents")        # or backend="replay"
    raw = llm.generate([prompts.intent_prompt(q) for q in queries], sampling=prompts_sampling)
    intents = [parsers.parse_intents(a[0]) for a in raw]

See ``client`` (the client and factory), ``backends``, ``cache`` (file format), ``models``
(GGUF registry, joined weights with sha256), ``prompts`` (the papers' templates), ``parsers``,
``tasks`` (ready-made generation tasks such as Re-Invoke intent extraction) and ``cli``.
"""
from toolkit.llm.base import (GREEDY, Answer, LLMError, ReplayMiss, Request, Sampling,  # noqa: F401
                              ServerUnavailable)
from toolkit.llm.cache import ResponseCache  # noqa: F401
from toolkit.llm.client import (BACKENDS, LLMClient, client_for_profile, get_client, make_backend,  # noqa: F401
                                select_backend)
from toolkit.llm import parsers, prompts  # noqa: F401,E402
