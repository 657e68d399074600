"""A chat model in this process (models.generate.LocalGenerator) against the same folder behind `transformers serve`
(an OpenAI-compatible server on 127.0.0.1, driven by models.generate.OpenAIGenerator), side by side on the same
prompts ("Please tell me about TOPIC" of chatgpt.big, greedy), the two alternating per repeat: new tokens/s of each,
the ratio, whether the texts agree, and P("Yes") of one judge prompt both ways (the server's through `logprobs`).

    python -m benchmarks.chat_server --model smollm2_135m_instruct --threads 1 [--prompts 4 --tokens 32 --repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import time

import requests

from benchmarks.common import add_run_options, machine, median, start_run, timed_rounds, write_result

SYSTEM = "You are a helpful assistant that writes short factual descriptions in English prose."
JUDGE = [{"role": "user", "content": "Statement 1: Ada Lovelace was born in 1815.\nStatement 2: Ada Lovelace was born "
                                     "in 1816.\nAre the two statements contradictory? Answer with Yes or No."}]


def serve(folder: str, threads: int | None):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    proc = subprocess.Popen(["transformers", "serve", folder, "--host", "127.0.0.1", "--port", str(port),
                             "--device", "cpu", "--dtype", "float32"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"transformers serve died: {proc.stderr.read()[-2000:]}")
        try:
            if requests.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except requests.ConnectionError:
            pass
        if time.time() > deadline:
            proc.terminate()
            raise RuntimeError("transformers serve did not start in 300 s")
        time.sleep(1)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2_135m_instruct", help="a model name or a transformers folder")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--data", default=os.path.join(os.environ.get("QASEM_DATA_DIR", "data"), "chatprotect",
                                                    "chatgpt.big.jsonl"))
    add_run_options(ap)
    a = ap.parse_args(argv)
    start_run(a)
    from models.generate import LocalGenerator, OpenAIGenerator
    from models.model_paths import resolve_model_path

    folder = resolve_model_path(a.model)
    prompts = []
    for line in open(a.data, encoding="utf-8"):
        p = json.loads(line)["prompt"]
        if p not in prompts:
            prompts.append(p)
        if len(prompts) == a.prompts:
            break
    asks = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": p}] for p in prompts]
    settings = dict(max_new_tokens=a.tokens, temperature=0.0)
    local = LocalGenerator(folder, chat=True, **settings)
    proc, url = serve(folder, a.threads)
    try:
        remote = OpenAIGenerator(url, folder, chat=True, concurrency=1, timeout=600, **settings)
        remote.generate(asks[:1])  # the server loads the model on its first request: not timed
        remote.__dict__.pop("usage", None)
        runs = {"in_process": lambda: [local.complete(x) for x in asks],
                "transformers_serve": lambda: [remote._complete(x, remote.settings) for x in asks]}
        times, outputs = timed_rounds(runs, a.repeats)
        tokens = {"in_process": local.usage["new_tokens"] / a.repeats,
                  "transformers_serve": remote.usage["new_tokens"] / a.repeats}
        yes = {"in_process": local.yes_probability([JUDGE])[0], "transformers_serve": remote.yes_probability([JUDGE])[0]}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    tps = {k: tokens[k] / median(times[k]) for k in runs}
    result = {"machine": machine(), "model": a.model, "prompts": len(asks), "max_new_tokens": a.tokens,
              "repeats": a.repeats, "seconds": times, "new_tokens_per_run": tokens,
              "tokens_per_second": {k: round(v, 2) for k, v in tps.items()},
              "server_over_in_process": round(tps["transformers_serve"] / tps["in_process"], 3),
              "same_texts": sum(x.strip() == y.strip() for x, y in zip(outputs["in_process"], outputs["transformers_serve"])),
              "p_yes": yes}
    print(json.dumps({k: result[k] for k in ("tokens_per_second", "server_over_in_process", "same_texts", "p_yes")}))
    print(write_result("chat_server", result, a.out))


if __name__ == "__main__":
    main()
