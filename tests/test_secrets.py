"""No secret leaves the machine: secret-looking overrides are masked in the model card,
W&B (config and recorded command line), the run's log and Hydra's .hydra/ files, while the job
itself still uses the real values."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from common.secrets import (MASK, SecretFilter, command_line, is_secret_key, mask_config, mask_override,
                            mask_overrides, secret_values)
from hub_server import run_hub_server

ROOT = Path(__file__).resolve().parents[1]
HUB_SECRET, WANDB_SECRET = "SUPERSECRET123", "SUPERSECRET456"


@pytest.mark.parametrize("key", ["hub.token", "+hub.token", "++foo.password", "logger.api_key", "+logger.API_KEY",
                                 "HF_TOKEN", "db.auth.user", "client_secret", "apikey", "~hub.token"])
def test_secret_keys(key):
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["hub.repo_id", "model.tokenizer", "trainer.args.max_new_tokens",
                                 "model.bos_token_id", "hydra.run.dir", "logger", "lr",
                                 "hydra.job.config.override_dirname.exclude_keys", "hydra.callbacks.redact_overrides"])
def test_not_secret_keys(key):
    assert not is_secret_key(key)


def test_overrides_and_configs_are_masked():
    assert mask_override("+hub.token=X") == "+hub.token=***"
    assert mask_override("++foo.password='a b'") == "++foo.password=***"
    assert mask_override("hub=push") == "hub=push" and mask_override("~hub.token") == "~hub.token"
    assert mask_override("hub.token=null") == "hub.token=null"
    assert mask_overrides(["hub.repo_id=u/x", "logger.api_key=K"]) == ["hub.repo_id=u/x", "logger.api_key=***"]
    assert secret_values(["hub.token='abc d'", "x=1"]) == ["'abc d'", "abc d"]
    assert command_line("train.parser", ["a=1", "+hub.token=S"]) == "python -m train.parser a=1 +hub.token=***"
    cfg = {"hub": {"token": "S", "repo_id": "u/x"}, "model": {"tokenizer": "t5"}, "auth": {"user": "u"},
           "logger": {"api_key": None}, "l": [{"password": "p"}]}
    assert mask_config(cfg) == {"hub": {"token": MASK, "repo_id": "u/x"}, "model": {"tokenizer": "t5"},
                                "auth": MASK, "logger": {"api_key": None}, "l": [{"password": MASK}]}


def test_log_records_are_scrubbed():
    import logging

    record = logging.LogRecord("x", logging.INFO, __file__, 1, "pushing with %s", ("tok-SECRET",), None)
    assert SecretFilter(["tok-SECRET"]).filter(record) and record.getMessage() == "pushing with ***"


def test_tiny_run_with_secrets_writes_and_pushes_them_masked(tmp_path):
    run_dir = tmp_path / "run"
    # the server accepts only the real hub token, so a successful push shows the job used it
    with run_hub_server(tmp_path, token=HUB_SECRET) as (endpoint, store):
        env = {k: v for k, v in os.environ.items()
               if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE",
                            "HUGGINGFACE_CO_STAGING", "HF_TOKEN", "WANDB_API_KEY")}
        env.update(HF_ENDPOINT=endpoint, HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1",
                   HF_HUB_CACHE=str(tmp_path / "hf-cache"), HF_HOME=str(tmp_path / "hf-home"),
                   WANDB_MODE="offline", WANDB_SILENT="true", TOKENIZERS_PARALLELISM="false")
        proc = subprocess.run(
            [sys.executable, "-m", "train.parser", "+experiment=tiny", f"hydra.run.dir={run_dir}", "hub=push",
             "hub.repo_id=user/x", f"+hub.token={HUB_SECRET}", "logger=wandb", f"+logger.api_key={WANDB_SECRET}"],
            cwd=ROOT, env=env, capture_output=True, timeout=600)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output.decode(errors="replace")[-4000:]
        pushed = store.files("user/x")

    secrets = (HUB_SECRET.encode(), WANDB_SECRET.encode())
    # the process output
    assert not any(s in output for s in secrets)
    # every file the run wrote: checkpoints, log, .hydra/, wandb/ (metadata, .wandb record file, logs)
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert any(p.parent.name == ".hydra" for p in files) and any(p.suffix == ".wandb" for p in files)
    assert any(p.name == "parser.log" for p in files)
    for p in files:
        data = p.read_bytes()
        assert not any(s in data for s in secrets), p
    # the pushed repo (and the server's mirror of it)
    assert "README.md" in pushed
    for path, data in pushed.items():
        assert not any(s in data for s in secrets), path
    for p in (tmp_path / "hub-server").rglob("*"):
        assert not p.is_file() or not any(s in p.read_bytes() for s in secrets), p
    # the card still quotes the command, masked
    card = pushed["README.md"].decode()
    assert "+hub.token=*** " in card and "+logger.api_key=***" in card and "hub.repo_id=user/x" in card
    assert "python -m train.parser +experiment=tiny" in card
    # .hydra/ stays usable: the masked overrides and config, the non-secret values intact
    hydra_dir = run_dir / ".hydra"
    assert f"+hub.token={MASK}" in (hydra_dir / "overrides.yaml").read_text()
    config_text = (hydra_dir / "config.yaml").read_text()
    assert "token: '***'" in config_text and "repo_id: user/x" in config_text
    assert "api_key: '***'" in config_text
    hydra_text = (hydra_dir / "hydra.yaml").read_text()
    assert "+logger.api_key=***" in hydra_text and "_target_: common.secrets.MaskSecretsCallback" in hydra_text
    assert "exclude_keys: []" in hydra_text
    # W&B recorded the masked command line
    record = next(run_dir.glob("wandb/offline-run-*/run-*.wandb")).read_bytes()
    assert b"+hub.token=***" in record
