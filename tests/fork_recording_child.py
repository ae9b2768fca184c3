"""A process that records a cassette with openai and forks while it does, for
tests/transports/test_recording_forks.py.

    fork_recording_child.py WAY CASSETTE BASE_URL

The parent records "first", lets forked children use the same client (WAY), then records "second" and
closes. WAY: ``pool`` (multiprocessing fork workers), ``executor`` (ProcessPoolExecutor with a fork
context), ``os_exit``, ``sys_exit``, ``return`` (a plain ``os.fork()`` whose child makes a call, then leaves
by ``os._exit``, ``sys.exit`` or the end of the program: atexit hooks and finalizers run), ``silent`` (a
child that makes no call and leaves by ``sys.exit``), ``mid_stream`` (the parent forks in the middle of a
stream, with lines of it not yet flushed; the child leaves by ``sys.exit``), ``miss`` (record-on-miss: the
child replays a call, then misses). Prints ``refused <message>``
for each refusal a child met, ``answered <text>`` for each answer a child got, and ``parent done``.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import sys

import httpx2
import openai

import vcr_transport

KEY = "sk-proj-TESTKEYabcdefghijklmnopqrstuvwxyz0123"
client: openai.OpenAI


def ask(prompt: str) -> str:
    answer = client.chat.completions.create(model="test-model", messages=[{"role": "user", "content": prompt}])
    return str(answer.choices[0].message.content)


def in_child(way: str) -> None:
    if way == "miss":
        print("replayed", ask("first"), flush=True)
    if way != "silent":
        try:
            print("answered", ask("child"), flush=True)
        except vcr_transport.CassetteError as error:
            print("refused", str(error).replace("\n", " "), flush=True)
    if way == "os_exit":
        os._exit(0)
    if way in ("sys_exit", "silent", "mid_stream"):
        sys.exit(0)


def main() -> None:
    global client
    way, cassette, url = sys.argv[1:4]
    http = httpx2.Client(transport=vcr_transport.transport(cassette, mode="record"))
    client = openai.OpenAI(api_key=KEY, base_url=url + "/v1", http_client=http, max_retries=0)
    ask("first")
    if way == "miss":  # record-on-miss: the child replays "first", then misses
        http.close()
        http = httpx2.Client(transport=vcr_transport.transport(cassette, mode="record-on-miss"))
        client = openai.OpenAI(api_key=KEY, base_url=url + "/v1", http_client=http, max_retries=0)
    if way == "pool":
        with multiprocessing.get_context("fork").Pool(2) as pool:
            for outcome in [pool.apply_async(ask, (f"worker {n}",)) for n in range(3)]:
                try:
                    print("answered", outcome.get(timeout=60), flush=True)
                except vcr_transport.CassetteError as error:
                    print("refused", str(error).replace("\n", " "), flush=True)
    elif way == "executor":
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as executor:
            for future in [executor.submit(ask, f"worker {n}") for n in range(3)]:
                try:
                    print("answered", future.result(timeout=60), flush=True)
                except vcr_transport.CassetteError as error:
                    print("refused", str(error).replace("\n", " "), flush=True)
    elif way == "mid_stream":
        stream = client.chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": "streamed"}], stream=True
        )
        events = iter(stream)
        read = [next(events), next(events)]
        child = os.fork()
        if child == 0:
            in_child(way)
            return
        os.waitpid(child, 0)
        text = "".join(event.choices[0].delta.content or "" for event in [*read, *events] if event.choices)
        print("streamed", text, flush=True)
    else:
        child = os.fork()
        if child == 0:
            in_child(way)
            return  # "return": the program ends here in the child, as a normal exit
        os.waitpid(child, 0)
        if way == "miss":
            ask("first")  # replayed: what the child played was its own
    ask("second")
    http.close()
    print("parent done", flush=True)


if __name__ == "__main__":
    main()
