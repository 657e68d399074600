"""Composing the parser configs in tests, as the command line would."""
from pathlib import Path

from hydra import compose, initialize_config_dir

CONF = str(Path(__file__).resolve().parents[1] / "conf")


def compose_cfg(config_name: str, overrides: list[str]):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(config_name=config_name, overrides=overrides)


def straight_and_killed_runs(cmd_for, tmp_path, kill_at: str, done_file: str, env: dict | None = None,
                             timeout: float = 300, checkpoints: str = "checkpoints") -> tuple:
    """Run `cmd_for(run_dir)` straight through in one folder; in another, SIGKILL it as soon as
    `<run>/<checkpoints>/<kill_at>/trainer_state.json` exists (kill_at may be a glob), check it died
    before writing `done_file`, and rerun the same command (which must say it resumes). Returns
    both run folders."""
    import os
    import signal
    import subprocess
    import time

    root = Path(CONF).parent
    env = {**os.environ, "WANDB_MODE": "offline", "OMP_NUM_THREADS": "1", **(env or {})}
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    subprocess.run(cmd_for(straight), cwd=root, env=env, check=True, capture_output=True)
    proc = subprocess.Popen(cmd_for(killed), cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout
    while not any((killed / checkpoints).glob(f"{kill_at}/trainer_state.json")):
        assert proc.poll() is None and time.time() < deadline, "the run ended before it could be killed"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / done_file).exists(), "the run was killed too late: it had already finished"
    out = subprocess.run(cmd_for(killed), cwd=root, env=env, check=True, capture_output=True, text=True)
    assert "resuming from" in out.stderr + out.stdout
    return straight, killed


def assert_same_weights(a: Path, b: Path, atol: float = 1e-6) -> None:
    """Two model.safetensors files hold the same tensors (to `atol`)."""
    import torch
    from safetensors.torch import load_file

    x, y = load_file(a), load_file(b)
    assert x.keys() == y.keys() and all(torch.allclose(x[k], y[k], atol=atol) for k in x)
