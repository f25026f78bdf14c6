"""The official ``openai`` client against the simulator, as users will call it."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.support.fixtures import MODEL

MESSAGES: Any = [{"role": "user", "content": "List three tips for writing clear documentation."}]


def client(url: str, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=kwargs.pop("api_key", "unused"), max_retries=0, **kwargs)


def test_chat_plain_and_streamed_agree(sim_url: str) -> None:
    c = client(sim_url)
    plain = c.chat.completions.create(model=MODEL, messages=MESSAGES, temperature=0, max_tokens=60)
    assert plain.choices[0].message.role == "assistant"
    assert plain.usage is not None and plain.usage.completion_tokens == 60
    stream = c.chat.completions.create(model=MODEL, messages=MESSAGES, temperature=0, max_tokens=60, stream=True,
                                       stream_options={"include_usage": True})
    pieces, usage, finish = [], None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            pieces.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    assert "".join(pieces) == plain.choices[0].message.content
    assert finish == "length"
    assert usage is not None and usage.completion_tokens == 60


def test_completions_plain_and_streamed(sim_url: str) -> None:
    c = client(sim_url)
    plain = c.completions.create(model=MODEL, prompt="Write a haiku about the sea", temperature=0, max_tokens=20)
    streamed = "".join(
        chunk.choices[0].text
        for chunk in c.completions.create(model=MODEL, prompt="Write a haiku about the sea", temperature=0,
                                          max_tokens=20, stream=True)
        if chunk.choices
    )
    assert streamed == plain.choices[0].text


def test_chat_logprobs_parse(sim_url: str) -> None:
    c = client(sim_url)
    r = c.chat.completions.create(model=MODEL, messages=MESSAGES, temperature=0, max_tokens=10, logprobs=True,
                                  top_logprobs=3)
    assert r.choices[0].logprobs is not None
    content = r.choices[0].logprobs.content
    assert content is not None
    assert "".join(t.token for t in content) == r.choices[0].message.content
    assert all(len(t.top_logprobs) == 3 for t in content)


def test_completion_logprobs_parse(sim_url: str) -> None:
    r = client(sim_url).completions.create(model=MODEL, prompt="Hello", temperature=0, max_tokens=5, logprobs=2)
    lp = r.choices[0].logprobs
    assert lp is not None and lp.tokens is not None and "".join(lp.tokens) == r.choices[0].text


def test_errors_surface_as_typed_exceptions(start_simulator: Any) -> None:
    url = start_simulator(api_keys=("k",), max_model_len=128)
    c = client(url, api_key="k")
    with pytest.raises(openai.NotFoundError) as not_found:
        c.chat.completions.create(model="nope", messages=MESSAGES)
    assert "does not exist" in str(not_found.value)
    with pytest.raises(openai.BadRequestError) as bad:
        c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=500)
    assert "cannot be greater than max_model_len=128" in str(bad.value)
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x " * 300}])
    with pytest.raises(openai.AuthenticationError):
        client(url, api_key="wrong").models.list()
    assert [m.id for m in c.models.list()] == [MODEL]


def test_server_errors_surface_as_typed_exceptions(start_simulator: Any) -> None:
    url = start_simulator(faults=_faults(error_500=1.0))
    with pytest.raises(openai.InternalServerError):
        client(url).chat.completions.create(model=MODEL, messages=MESSAGES)
    url = start_simulator(faults=_faults(error_429=1.0))
    with pytest.raises(openai.RateLimitError) as limited:
        client(url).chat.completions.create(model=MODEL, messages=MESSAGES)
    assert limited.value.response.headers["retry-after"] == "1"


def test_error_frame_after_200_raises_in_the_stream(start_simulator: Any) -> None:
    url = start_simulator(faults=_faults(error_frame=1.0))
    stream = client(url).chat.completions.create(model=MODEL, messages=MESSAGES, stream=True, temperature=0)
    with pytest.raises(openai.APIError, match="Simulated engine failure"):
        for _ in stream:
            pass


def test_reset_mid_stream_raises_a_connection_error(start_simulator: Any) -> None:
    url = start_simulator(faults=_faults(reset=1.0))
    stream = client(url).chat.completions.create(model=MODEL, messages=MESSAGES, stream=True, temperature=0)
    received = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in stream:
            received.append(chunk)
    # The role chunk and --fault-after-tokens (3) tokens arrived before the reset.
    assert len(received) == 4


def _faults(**rates: float) -> Any:
    from shadowdiff.simulator.faults import Fault, FaultSettings

    return FaultSettings(rates={Fault(k): v for k, v in rates.items()}, seed=0)
