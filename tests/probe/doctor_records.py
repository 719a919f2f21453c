"""Synthetic, self-consistent request records and compile events for the doctor's pure tests:
every mark in order (arrival ≤ start ≤ encoder done ≤ last token ≤ end) and latency_ms equal
to end − arrival, as the engine writes them."""

from __future__ import annotations

from probe.contract.records import CompileEvent, RequestRecord


def record(i: int, *, arrival_s: float, queue_s: float = 0.0, encode_s: float = 0.01,
           decode_s: float = 0.1, row_wait_s: float = 0.0, input_tokens: int = 10,
           padded_tokens: int | None = None, output_tokens: int = 10, config_id: str = "c1",
           start_s: float | None = None, batch_size: float = 1, kv_wait_s: float = 0.0,
           error: str | None = None, stall_ms: float = 0.0) -> RequestRecord:
    start = arrival_s + queue_s if start_s is None else start_s
    encoded = start + encode_s
    last = encoded + decode_s
    end = last + row_wait_s
    return RequestRecord(
        id=f"r{i}", seq=i, config_id=config_id, input_tokens=input_tokens,
        padded_tokens=padded_tokens or input_tokens,
        output_tokens=0 if error else output_tokens, arrival_s=arrival_s, start_s=start,
        first_token_s=None if error else encoded + decode_s / max(output_tokens, 1),
        end_s=end, queue_ms=(start - arrival_s) * 1e3, compile_stall_ms=stall_ms,
        encoder_ms=0.0 if error else encode_s * 1e3,
        decoder_ms=0.0 if error else (end - encoded) * 1e3, ttft_ms=None, tpot_ms=None,
        latency_ms=(end - arrival_s) * 1e3, kv_cache_bytes=0, kv_cache_used_bytes=0,
        kv_self_attention_bytes=0, kv_cross_attention_bytes=0, batch_size=batch_size,
        error=error, last_token_s=None if error else last, kv_wait_ms=kv_wait_s * 1e3)


def event(compile_id: str, start_s: float, duration_s: float, *, kind: str = "compile",
          function: str = "decode_step", config_id: str = "c1", reason: str | None = None,
          request_id: str | None = None) -> CompileEvent:
    return CompileEvent(compile_id=compile_id, kind=kind, function=function, start_s=start_s,
                        duration_s=duration_s, reason=reason, request_id=request_id,
                        config_id=config_id)


def serial(lengths: list[tuple[float, float]], *, gap_s: float = 1.0, **kwargs
           ) -> list[RequestRecord]:
    """Requests served one after another on one engine thread: (arrival gap, service s) each;
    a request starts when it arrives or when the one before ended."""
    out, t, free_at = [], 0.0, 0.0
    for i, (gap, service) in enumerate(lengths):
        t += gap
        start = max(t, free_at)
        r = record(i, arrival_s=t, start_s=start, encode_s=service * 0.1,
                   decode_s=service * 0.9, **kwargs)
        free_at = r.end_s
        out.append(r)
    return out
