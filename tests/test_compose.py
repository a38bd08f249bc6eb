"""docker-compose.yml, checked without Docker.

The structure tests parse the file: every service has an image and a command, health checks
where something runs for long, ``depends_on`` conditions that point at services able to meet
them and no cycle, named volumes only, and configuration only through ``environment``.

:class:`ComposeStack` then runs the file's own commands *outside containers*, as local
processes: it interpolates the file as compose does, brings the services up in dependency
order, waits on each condition with the service's own health check command, and rewrites
only what a container network provides: ``SERVICE:PORT`` becomes ``127.0.0.1:LOCAL_PORT``,
the database and queue become the test's own. tests/test_scaleout.py uses it too.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
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


# --- compose semantics -----------------------------------------------------------------------

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


# --- running the services as local processes --------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, check: Any, timeout: float, poll: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(poll)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def get_json(url: str, timeout: float = 10.0) -> Any:
    import json

    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


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
        result = subprocess.run(
            self.command(name), env=self.env(name), cwd=self.workdir, capture_output=True, text=True,
            timeout=180, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self.completed[name] = result
        return result

    def start(self, name: str, instance: str) -> Running:
        log_path = self.workdir / f"{instance}.log"
        log = log_path.open("wb")
        env = self.env(name)
        process = subprocess.Popen(
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
            result = subprocess.run(
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


# --- structure --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose(VARIABLES)


def arena_services(compose: dict[str, Any]) -> dict[str, Any]:
    return {n: s for n, s in compose["services"].items() if n not in EXTERNAL}


def test_every_service_has_an_image_and_a_command(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert service.get("image") or service.get("build"), name
    for name, service in arena_services(compose).items():
        assert service.get("build") == "." and service.get("image") == "tonk-arena:latest", name
        assert isinstance(service.get("command"), list) and service["command"], f"{name}: exec-form command"


def test_long_running_services_have_health_checks_and_restart(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if is_one_shot(service):
            assert "healthcheck" not in service, name
            continue
        check = service.get("healthcheck")
        assert check and check["test"][0] == "CMD" and len(check["test"]) > 1, f"{name} needs a healthcheck"
        assert service.get("restart") == "unless-stopped", name
    assert {n for n, s in compose["services"].items() if is_one_shot(s)} == {"migrate", "setup"}


def test_depends_on_conditions_can_be_met(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        raw = service.get("depends_on")
        assert raw is None or isinstance(raw, dict), f"{name}: give depends_on with conditions"
        for dep, condition in depends(service).items():
            assert dep in services, f"{name} depends on unknown service {dep}"
            assert condition in CONDITIONS, f"{name} -> {dep}: {condition}"
            if condition == "service_healthy":
                assert "healthcheck" in services[dep], (
                    f"{name} waits for {dep} to be healthy; it has no check"
                )
            if condition == "service_completed_successfully":
                assert is_one_shot(services[dep]), f"{name} waits for {dep} to exit, but it runs forever"
    order = start_order(services)
    # The schema is upgraded before anything uses the store; the bots are entered once the
    # dashboard and every bot answer.
    for user in ("dashboard", "worker"):
        assert depends(services[user])["migrate"] == "service_completed_successfully"
        assert order.index("migrate") < order.index(user)
    assert depends(services["migrate"]) == {"postgres": "service_healthy"}
    bots = {n for n in services if n.startswith("bot-")}
    assert set(depends(services["setup"])) == {"dashboard", *bots}


def test_a_cycle_is_reported() -> None:
    with pytest.raises(ValueError, match="cycle: a -> b -> a"):
        start_order({"a": {"depends_on": ["b"]}, "b": {"depends_on": ["a"]}})


def test_volumes_are_named_and_declared(compose: dict[str, Any]) -> None:
    declared = set(compose.get("volumes") or {})
    used = set()
    for name, service in compose["services"].items():
        for volume in service.get("volumes") or []:
            source = str(volume).split(":", 1)[0]
            assert not source.startswith((".", "/", "~")), f"{name}: bind mount {volume}; use a named volume"
            assert source in declared, f"{name}: volume {source} is not declared"
            used.add(source)
    assert used == declared == {"redis-data", "postgres-data"}


def test_configuration_is_only_environment(compose: dict[str, Any]) -> None:
    from arena.config import load_settings

    documented = set(re.findall(r"\| `(TONK_[A-Z_]+)` \|", (ROOT / "docs/configuration.md").read_text()))
    for name, service in compose["services"].items():
        assert "env_file" not in service and "configs" not in service and "secrets" not in service, name
        environment = service.get("environment") or {}
        assert isinstance(environment, dict), f"{name}: environment as a mapping"
        for key in environment:
            if key.startswith("TONK_"):
                assert key in documented | CLIENT_VARIABLES, f"{name}: {key} is not in docs/configuration.md"
    services = compose["services"]
    env = services["dashboard"]["environment"]
    for name in ("migrate", "worker"):
        assert services[name]["environment"] == env, f"{name} must see the dashboard's settings"
    settings = load_settings(env)  # the values parse
    assert (
        settings.database_url.startswith("postgresql+psycopg://")
        and "@postgres:5432/" in settings.database_url
    )
    assert settings.redis_url == "redis://redis:6379/0"
    assert settings.operator_token == VARIABLES["TONK_OPERATOR_TOKEN"]
    assert settings.secret_key == VARIABLES["TONK_SECRET_KEY"]
    bots = {n for n in services if n.startswith("bot-")}
    assert set(settings.allowed_bot_hosts) == bots
    assert services["setup"]["environment"]["TONK_TOKEN"] == VARIABLES["TONK_OPERATOR_TOKEN"]
    assert (
        services["setup"]["environment"]["TONK_ARENA"] == f"http://dashboard:{CONTAINER_PORTS['dashboard']}"
    )


def test_secrets_must_be_set() -> None:
    with pytest.raises(InterpolationError, match="TONK_OPERATOR_TOKEN"):
        load_compose({"TONK_SECRET_KEY": "x"})
    with pytest.raises(InterpolationError, match="TONK_SECRET_KEY"):
        load_compose({"TONK_OPERATOR_TOKEN": "x", "TONK_SECRET_KEY": ""})


def test_interpolation_follows_compose() -> None:
    env = {"A": "1", "E": ""}
    assert interpolate("$$A ${A} $A ${B:-d} ${E:-d} ${E-d} ${B-d} x$${A}", env) == "$A 1 1 d d  d x${A}"


def test_workers_scale_and_bots_are_house_bots(compose: dict[str, Any]) -> None:
    from sdk.players import HOUSE_BOTS

    services = compose["services"]
    worker = services["worker"]
    assert "container_name" not in worker and "ports" not in worker, "--scale worker=N needs neither"
    assert worker["command"][:2] == ["tonk", "worker"]
    for name in (n for n in services if n.startswith("bot-")):
        command = services[name]["command"]
        assert command[:2] == ["tonk", "serve"] and command[2] == name.removeprefix("bot-")
        assert command[2] in HOUSE_BOTS
        assert command[command.index("--host") + 1] == "0.0.0.0"
        assert command[command.index("--port") + 1] == str(CONTAINER_PORTS[name])
        # the setup service enters it at that address
        assert f"register {command[2]} {name}:{CONTAINER_PORTS[name]}" in services["setup"]["command"][-1]
    assert (
        services["dashboard"]["command"][0] == "gunicorn"
        and "dashboard.wsgi:app" in services["dashboard"]["command"]
    )
    assert "0.0.0.0:8000" in services["dashboard"]["command"]
    assert services["dashboard"]["ports"] == ["8000:8000"]


def test_the_dashboard_waits_as_long_as_tonk_submit(compose: dict[str, Any]) -> None:
    """Entering a bot plays test matches before the answer: gunicorn must not kill the request
    before the client gives up, and must serve other pages meanwhile."""
    from sdk.commands.submit import DEFAULT_TIMEOUT_S

    command = compose["services"]["dashboard"]["command"]
    assert float(command[command.index("--timeout") + 1]) >= DEFAULT_TIMEOUT_S
    assert int(command[command.index("--threads") + 1]) > 1


def test_the_image_has_what_the_commands_need() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    for package in ("sdk", "arena", "dashboard", "bots"):
        assert f"COPY {package} ./{package}" in dockerfile
    assert re.search(r"pip install '\.\[arena,dashboard\]'", dockerfile)
    assert "EXPOSE 8000 50051" in dockerfile


# --- the commands, outside containers ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_the_services_run_outside_containers(
    tmp_path: Path, pg_url: str, redis_url: str, redis_prefix: str
) -> None:
    """Every long-running service's command starts and passes its own health check, after
    migrate (tonk db upgrade) on a test database: the dashboard under gunicorn, a worker on a
    test queue, the three house bots. (The setup service, which needs all of them, runs in
    tests/test_scaleout.py, on the same stack with two workers.)"""
    stack = ComposeStack(tmp_path / "stack", VARIABLES, stack_environment(pg_url, redis_url, redis_prefix))
    long_running = [n for n, s in stack.services.items() if not is_one_shot(s) and n not in EXTERNAL]
    try:
        stack.up(only=["migrate", *long_running])
        assert "upgraded from an empty database" in stack.completed["migrate"].stdout
        for name in long_running:
            stack.wait_healthy(name)
        assert get_json(stack.url("/healthz")) == {"status": "ok"}
        # A worker stops cleanly on SIGTERM (docker compose stop), and --burst ends by itself.
        (worker,) = stack.instances("worker")
        assert stack.stop(worker) == 0, stack.log(worker)
        burst = subprocess.run([*stack.command("worker"), "--burst"], env=stack.env("worker"),
                               cwd=stack.workdir, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert burst.returncode == 0, burst.stderr
    finally:
        stack.down()


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
