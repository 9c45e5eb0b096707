"""``pathwatch tickets``: run the ticket service, apply a file of anomalies, receive Alertmanager's notifications."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(help="Tickets from anomalies: one per problem, updated while it lasts, resolved when it ends.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

Home = Annotated[Optional[Path], typer.Option("--home", help="State directory (default: $PATHWATCH_HOME, else .pathwatch).")]
ConfigFile = Annotated[Optional[Path], typer.Option("--config", help="Stack config file (default: pathwatch.toml in the state directory).")]
PolicyFile = Annotated[Optional[Path], typer.Option("--policy", help="Policy file, YAML or JSON (priorities, quiet mode, rate limits, reopen window); see tickets/README.md.")]
BackendName = Annotated[str, typer.Option("--backend", help="rt (the stack's Request Tracker, or rt_url) or webhook.")]
WebhookUrl = Annotated[Optional[str], typer.Option("--webhook-url", help="Where the webhook backend POSTs (with --backend webhook).")]
NoDatabase = Annotated[bool, typer.Option("--no-database", help="Do not record tickets in the anomaly_tickets table.")]

EXIT_FAILED, EXIT_REJECTED = 1, 2


def _fail(message: str) -> None:
    from pathwatch.console import err_console

    err_console().print(f"[red]{message}[/red]", markup=True, highlight=False)
    raise typer.Exit(EXIT_FAILED)


def _build(home, config_file, policy_file, backend: str, webhook_url: Optional[str], database: bool):
    """The reconciler and the anomaly_tickets recorder for the configured stack."""
    from pathwatch.stack.component import StackError
    from pathwatch.stack.config import ConfigError, resolve
    from pathwatch.tickets import policy as policies
    from pathwatch.tickets.reconcile import Reconciler
    from pathwatch.tickets.service import TicketTable

    try:
        config = resolve(home=home, config_file=config_file)
        rules = policies.load(policy_file)
        if backend == "rt":
            from pathwatch.stack.rt import RequestTracker
            from pathwatch.tickets.backends.rt import RTBackend

            rt = RequestTracker(config)
            chosen = RTBackend(rt.url, rt.token(), config.rt_queue)
        elif backend == "webhook":
            from pathwatch.tickets.backends.webhook import WebhookBackend

            if not webhook_url:
                raise ConfigError("--backend webhook needs --webhook-url")
            chosen = WebhookBackend(webhook_url, config.home / "tickets" / "webhook-ledger.json")
        else:
            raise ConfigError(f"--backend {backend!r}: choose rt or webhook")
    except (ConfigError, StackError, policies.PolicyError) as error:
        _fail(str(error))
    from pathwatch.stack.superset import Superset

    superset_url = Superset(config).url
    recorder = None
    if database:
        from pathwatch.stack.timescale import TimescaleDB

        recorder = TicketTable(TimescaleDB(config).url, chosen.name)
    return config, Reconciler(chosen, rules, superset_url), recorder


def _report(handled) -> None:
    outcome, letter = handled.outcome, handled.dead_letter
    if letter is not None:
        line = {"dead_letter": letter["reason"], "field": letter["field"]}
    else:
        line = {"action": outcome.action, "anomaly": outcome.anomaly_id, "key": outcome.key,
                "ticket": outcome.ticket.reference if outcome.ticket else None, "detail": outcome.detail}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


@app.command()
def run(home: Home = None, config_file: ConfigFile = None, policy_file: PolicyFile = None,
        backend: BackendName = "rt", webhook_url: WebhookUrl = None, no_database: NoDatabase = False,
        group: Annotated[str, typer.Option("--group", help="Kafka consumer group (its committed offsets are the resume point).")] = "pathwatch-tickets",
        until_idle: Annotated[Optional[float], typer.Option("--until-idle", help="Exit after this many seconds without a message.")] = None,
        via_alertmanager: Annotated[bool, typer.Option("--via-alertmanager", help="Post alerts to the stack's Alertmanager instead; `pathwatch tickets receive` makes the tickets.")] = False,
        repost_s: Annotated[float, typer.Option("--repost-s", help="With --via-alertmanager: re-post open anomalies this often (below resolve_timeout, 5 min).")] = 60.0) -> None:
    """Consume the anomalies topic and keep tickets in step (until stopped: Ctrl-C or SIGTERM)."""
    from pathwatch.stack.kafka import Kafka, topic_names
    from pathwatch.tickets.service import Handler, consume

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    if via_alertmanager:
        from pathwatch.stack.alertmanager import Alertmanager
        from pathwatch.stack.config import ConfigError, resolve
        from pathwatch.tickets.alertmanager import AlertPoster
        from pathwatch.tickets.backends.base import BackendError

        try:
            config = resolve(home=home, config_file=config_file)
        except ConfigError as error:
            _fail(str(error))
        reconciler, recorder = AlertPoster(Alertmanager(config).url), None
        try:
            logging.info("tickets: %d open anomalies taken back from Alertmanager", reconciler.reload())
        except BackendError as error:
            _fail(str(error))
        reconciler.keep_alive(repost_s, stopping)
    else:
        config, reconciler, recorder = _build(home, config_file, policy_file, backend, webhook_url, not no_database)
    handler = Handler(reconciler, dead_letters=lambda letter: None, record=recorder, stopping=stopping)
    original = handler.handle

    def handle_and_report(*args, **kwargs):
        handled = original(*args, **kwargs)
        _report(handled)
        return handled

    handler.handle = handle_and_report  # type: ignore[method-assign]
    from pathwatch.stack import jobs

    with jobs.registered("tickets", home=config.home, kind="tickets", group=group,
                         via="alertmanager" if via_alertmanager else backend):   # listed by `stack status`
        count = consume(handler, Kafka(config).bootstrap, topic_names(config), group, stopping, until_idle, config)
    logging.info("tickets: %d message(s) handled", count)


@app.command()
def apply(files: Annotated[list[Path], typer.Argument(help="Anomaly JSON Lines (e.g. `pathwatch detect --out`), or - for stdin.")],
          home: Home = None, config_file: ConfigFile = None, policy_file: PolicyFile = None,
          backend: BackendName = "rt", webhook_url: WebhookUrl = None, no_database: NoDatabase = False) -> None:
    """Apply anomalies from files, in order, as the service would (bad lines are reported, exit 2)."""
    from pathwatch.tickets.service import Handler

    logging.getLogger("pathwatch.tickets").setLevel(logging.ERROR)   # rejected lines are reported below
    _, reconciler, recorder = _build(home, config_file, policy_file, backend, webhook_url, not no_database)
    rejected = []
    handler = Handler(reconciler, dead_letters=rejected.append, record=recorder)
    for path in files:
        stream = sys.stdin.buffer if str(path) == "-" else open(path, "rb")
        with stream:
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                handled = handler.handle(line, topic=f"{path}", offset=number)
                if handled.dead_letter is not None:
                    sys.stderr.write(f"{path}, line {number}, {handled.dead_letter['reason']}\n")
                else:
                    _report(handled)
    if rejected:
        raise typer.Exit(EXIT_REJECTED)


@app.command()
def receive(home: Home = None, config_file: ConfigFile = None, policy_file: PolicyFile = None,
            backend: BackendName = "rt", webhook_url: WebhookUrl = None, no_database: NoDatabase = False) -> None:
    """Receive Alertmanager's webhook notifications (port alertmanager_receiver_port) and make the tickets."""
    from pathwatch.tickets.alertmanager import receiver

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    config, reconciler, recorder = _build(home, config_file, policy_file, backend, webhook_url, not no_database)

    def record(outcome, anomaly) -> None:
        if recorder is not None and outcome.ticket is not None:
            recorder(outcome)

    server = receiver(reconciler, config.alertmanager_receiver_port, on_outcome=record)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    logging.info("tickets: receiving Alertmanager notifications on 127.0.0.1:%d", config.alertmanager_receiver_port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
