"""The platform side of LLM calls (docs/llm.md).

client.py     get_client(): the harness LLMClient over settings.BENCHFORGE_MODELS with the
              platform's plug-ins (cache, limiter, ledger meter); check_endpoints(); config errors
cache.py      DatabaseCache (default) and RedisCache (BENCHFORGE_LLM_CACHE_URL): harness Cache
limiter.py    RedisLimiter: max_concurrency across workers and hosts (harness Limiter)
context.py    the per-thread trace of the call running now; database turns on SQLite
engine.py     run_concurrently, the one entry of every platform call; PlatformClient; Call, CallResult
ledger.py     the usage and cost ledger; Meter, the client's meter plug-in (billed to the paying job run)
sink.py       JobSink: the harness's sink over a job's entries (QC, leaderboard scoring)
services.py   estimate, start_batch, start_batch_in_parts, run_calls, the llm_batch runner
selectors.py  usage_of (the ledger, priced); call entries of a job and their summary; batches
api.py        /api/v1/llm/: endpoints, estimate, batches (researchers)
"""
