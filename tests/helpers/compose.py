"""docker-compose.yml read with compose's semantics and brought up as local processes
(:class:`ComposeStack`), for tests/system/test_compose.py and tests/system/test_scaleout.py."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from arena.processes import run_process, spawn
from helpers.net import free_port, listening, wait_for

ROOT = Path(__file__).resolve().parents[2]


COMPOSE_FILE = ROOT / "docker-compose.yml"


BIN = Path(sys.executable).parent  # the virtualenv's bin: tonk, gunicorn, python


#: Ports the services listen on inside their containers.
CONTAINER_PORTS = {
    "dashboard": 8000, "gateway": 50061, "bot-random": 50051, "bot-greedy": 50051, "bot-heuristic": 50051,
}


#: Services that come from public images; the tests use the local servers instead.
EXTERNAL = {"redis", "postgres"}


#: Variables `tonk submit` reads (the SDK's, not the arena's).
CLIENT_VARIABLES = {"TONK_ARENA", "TONK_TOKEN"}


CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}


_VARIABLE = re.compile(r"\$\$|\$\{([A-Za-z_]\w*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_]\w*)")


class InterpolationError(ValueError):
    pass


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Compose's variable substitution: ``$$``, ``$VAR``, ``${VAR}``, ``${VAR:-default}``,
    ``${VAR-default}``, ``${VAR:?error}`` and ``${VAR?error}``."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(4)
        op, arg = match.group(2), match.group(3) or ""
        value = env.get(name)
        missing = value is None or (op is not None and op.startswith(":") and value == "")
        if op in ("-", ":-"):
            return arg if missing else str(value)
        if op in ("?", ":?"):
            if missing:
                raise InterpolationError(f"{name}: {arg}")
            return str(value)
        return "" if value is None else value

    return _VARIABLE.sub(one, text)


def interpolated(node: Any, env: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [interpolated(x, env) for x in node]
    if isinstance(node, dict):
        return {k: interpolated(v, env) for k, v in node.items()}
    return node


def load_compose(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The file as compose sees it: YAML anchors merged, then variables substituted."""
    raw = yaml.safe_load(COMPOSE_FILE.read_text())
    return raw if env is None else interpolated(raw, env)  # type: ignore[no-any-return]


def depends(service: Mapping[str, Any]) -> dict[str, str]:
    """``depends_on`` as {service: condition} (the short list form means service_started)."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: spec.get("condition", "service_started") for name, spec in deps.items()}


def start_order(services: Mapping[str, Any]) -> list[str]:
    """Services in an order that respects ``depends_on`` (ValueError on a cycle)."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            raise ValueError(f"depends_on cycle: {' -> '.join((*path, name))}")
        state[name] = "visiting"
        for dep in depends(services[name]):
            visit(dep, (*path, name))
        state[name] = "done"
        order.append(name)

    for name in services:
        visit(name, ())
    return order


def is_one_shot(service: Mapping[str, Any]) -> bool:
    return service.get("restart", "no") in ("no", False)  # YAML reads a bare `no` as False


def dockerfile_env() -> dict[str, str]:
    """The image's ``ENV`` settings (``ENV A=1 B=2`` lines)."""
    env: dict[str, str] = {}
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("ENV "):
            for item in shlex.split(line[4:]):
                key, _, value = item.partition("=")
                env[key] = value
    return env


@dataclass
class Running:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes]
    env: dict[str, str]


@dataclass
class ComposeStack:
    """docker-compose.yml brought up as local processes (see the module's docstring).

    ``variables``: the shell environment compose would interpolate from. ``environment``:
    values that replace a service's own (the test's database, queue...). ``scale``: instances
    per service, as ``--scale``.
    """

    workdir: Path
    variables: dict[str, str]
    environment: dict[str, str] = field(default_factory=dict)
    scale: dict[str, int] = field(default_factory=dict)
    startup_timeout: float = 60.0
    services: dict[str, Any] = field(init=False)
    ports: dict[str, int] = field(init=False)
    running: list[Running] = field(default_factory=list, init=False)
    completed: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.services = load_compose(self.variables)["services"]
        self.ports = {name: free_port() for name in CONTAINER_PORTS}
        self.workdir.mkdir(parents=True, exist_ok=True)

    # Rewriting what a container network provides.
    def local(self, text: str, service: str | None = None) -> str:
        for name, port in self.ports.items():
            text = text.replace(f"{name}:{CONTAINER_PORTS[name]}", f"127.0.0.1:{port}")
        if service in self.ports:  # its own listening address and port
            own = CONTAINER_PORTS[service]
            text = text.replace(f"0.0.0.0:{own}", f"127.0.0.1:{self.ports[service]}")
            text = text.replace(f"127.0.0.1:{own}", f"127.0.0.1:{self.ports[service]}")
        return text

    def command(self, name: str) -> list[str]:
        argv = [self.local(str(a), name) for a in self.services[name]["command"]]
        argv = ["127.0.0.1" if a == "0.0.0.0" else a for a in argv]
        if name in self.ports:
            own = str(CONTAINER_PORTS[name])
            argv = [str(self.ports[name]) if a == own else a for a in argv]
        return argv

    def healthcheck(self, name: str) -> list[str] | None:
        check = self.services[name].get("healthcheck")
        if not check:
            return None
        test = [self.local(str(a), name) for a in check["test"]]
        assert test[0] == "CMD", f"{name}: use the exec form ['CMD', ...] (no shell in the image is assumed)"
        return test[1:]

    def env(self, name: str) -> dict[str, str]:
        env = {
            "PATH": f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "HOME": str(self.workdir),
            "LANG": "C.UTF-8",
            "TONK_SANDBOX_DIR": os.environ["TONK_SANDBOX_DIR"],  # the session's (tests/conftest.py)
            "TMPDIR": os.environ["TMPDIR"],  # the run's folder (tests/scratch.py)
        }
        env.update(dockerfile_env())
        own = {k: self.local(str(v)) for k, v in (self.services[name].get("environment") or {}).items()}
        env.update(own)
        env.update({k: v for k, v in self.environment.items() if k in own})
        return env

    # Life cycle.
    def up(self, only: list[str] | None = None) -> None:
        wanted = set(only) if only else set(self.services)
        for name in start_order(self.services):
            if name not in wanted or name in EXTERNAL:
                continue
            service = self.services[name]
            for dep, condition in depends(service).items():
                if dep in EXTERNAL:
                    continue
                if condition == "service_completed_successfully":
                    assert self.completed[dep].returncode == 0, self.completed[dep]
                if condition == "service_healthy":
                    self.wait_healthy(dep)
            if is_one_shot(service):
                result = self.run(name)
                assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
            else:
                for i in range(self.scale.get(name, 1)):
                    self.start(name, f"{name}-{i + 1}")

    def run(self, name: str) -> subprocess.CompletedProcess[str]:
        result = run_process(
            self.command(name), env=self.env(name), cwd=self.workdir, capture_output=True, text=True,
            timeout=180, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self.completed[name] = result
        return result

    def start(self, name: str, instance: str) -> Running:
        log_path = self.workdir / f"{instance}.log"
        log = log_path.open("wb")
        env = self.env(name)
        process = spawn(
            self.command(name), env=env, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        running = Running(instance, process, log_path, log, env)
        self.running.append(running)
        return running

    def instances(self, name: str) -> list[Running]:
        return [r for r in self.running if r.name.rsplit("-", 1)[0] == name]

    def wait_healthy(self, name: str) -> None:
        """Every instance of ``name`` alive and passing the service's own health check."""
        for instance in self.instances(name):
            if name in self.ports:  # cheap until something listens, then the real check
                port = self.ports[name]
                wait_for(f"{name} to listen", lambda i=instance, p=port: self._alive(i) and listening(p),
                         self.startup_timeout)  # fmt: skip
            wait_for(f"{name} to be healthy", lambda i=instance: self._healthy(name, i),
                     self.startup_timeout, poll=0.5)  # fmt: skip

    def _alive(self, instance: Running) -> bool:
        if instance.process.poll() is not None:
            raise AssertionError(
                f"{instance.name} exited with {instance.process.returncode}:\n{self.log(instance)}"
            )
        return True

    def _healthy(self, name: str, instance: Running) -> bool:
        self._alive(instance)
        test = self.healthcheck(name)
        assert test is not None, f"{name} is waited on as healthy but has no healthcheck"
        timeout = float(str(self.services[name]["healthcheck"].get("timeout", "30s")).rstrip("s"))
        try:
            result = run_process(
                test, env=instance.env, cwd=self.workdir, capture_output=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return False
        return result.returncode == 0

    def log(self, instance: Running) -> str:
        instance.log.flush()
        return instance.log_path.read_text(errors="replace")[-4000:]

    def stop(self, instance: Running, timeout: float = 30.0) -> int:
        """SIGTERM (what ``docker compose stop`` sends), then SIGKILL after ``timeout``."""
        if instance.process.poll() is None:
            instance.process.send_signal(signal.SIGTERM)
            try:
                instance.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(instance.process.pid, signal.SIGKILL)
                instance.process.wait()
        instance.log.close()
        return int(instance.process.returncode)

    def down(self) -> None:
        for instance in reversed(self.running):
            if instance.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    instance.process.send_signal(signal.SIGTERM)
        for instance in reversed(self.running):
            try:
                instance.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(instance.process.pid, signal.SIGKILL)
                instance.process.wait()
            # Whatever a service left behind in its session (gunicorn's workers...) goes too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(instance.process.pid, signal.SIGKILL)
            instance.log.close()
        self.running.clear()
        self._forget_workers()

    def _forget_workers(self) -> None:
        """RQ lists every worker in the shared set ``rq:workers``; one that could not say
        goodbye (killed) would stay there: take ours (named after our queue) out."""
        queue, url = self.environment.get("TONK_QUEUE"), self.environment.get("TONK_REDIS_URL")
        if not (queue and url):
            return
        from redis import Redis

        with Redis.from_url(url) as redis:
            ours = [m for m in redis.smembers("rq:workers") if queue.encode() in m]
            if ours:
                redis.srem("rq:workers", *ours)

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.ports['dashboard']}{path}"


VARIABLES = {"TONK_OPERATOR_TOKEN": "operator-token-for-tests-0123456789", "TONK_SECRET_KEY": "s" * 40}


def stack_environment(pg_url: str, redis_url: str, redis_prefix: str) -> dict[str, str]:
    """What replaces the compose network's names: the test's database and its own queue."""
    relay = free_port()  # the gateway's relay port is not published, so no compose name maps it
    return {
        "TONK_DATABASE_URL": pg_url,
        "TONK_REDIS_URL": redis_url,
        "TONK_QUEUE": f"{redis_prefix}-matches",
        "TONK_ALLOWED_BOT_HOSTS": "127.0.0.1",
        "TONK_GATEWAY_RELAY_PORT": str(relay),
        "TONK_GATEWAY_ADVERTISE": f"127.0.0.1:{relay}",
    }


@contextlib.contextmanager
def compose_stack(tmp_path: Path, pg_url: str, redis_url: str, redis_prefix: str,
                  scale: dict[str, int] | None = None) -> Iterator[ComposeStack]:  # fmt: skip
    """The whole file up as local processes for the block; everything stopped after."""
    stack = ComposeStack(tmp_path / "stack", VARIABLES, stack_environment(pg_url, redis_url, redis_prefix),
                         scale=scale or {})  # fmt: skip
    try:
        stack.up()
        yield stack
    finally:
        stack.down()
