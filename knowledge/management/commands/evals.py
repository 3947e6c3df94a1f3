"""Offline evaluations: `evals retrieval` scores the search pipeline on judged queries (fixture or BEIR)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from knowledge.connectors import beir
from knowledge.errors import KnowledgeError
from knowledge.evals import baseline as baselines
from knowledge.evals import compare as comparing
from knowledge.evals.configs import CONFIGS, EvalConfig, select_configs
from knowledge.evals.datasets import (
    FIXTURE_DIR,
    FIXTURE_TENANT,
    Dataset,
    IngestOutcome,
    corpus_ingest,
    default_tenant_slug,
    load_dataset,
    model_tenant_slug,
    write_json,
)
from knowledge.evals.metrics import MetricSet, judged_queries
from knowledge.evals.report import (
    ModelRun,
    RunInfo,
    chart_metrics,
    json_report,
    markdown_report,
    models_report,
    models_table,
    text_table,
)
from knowledge.evals.runner import ConfigResult, run_config
from knowledge.models import Connector, Document
from knowledge.pipeline.active import active_embedder, embedder_for, embedder_override
from knowledge.pipeline.registry import configured_name


def parse_ks(value: str) -> tuple[int, ...]:
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise CommandError(f"--k expects comma-separated integers, got {value!r}") from None
    if not ks or ks[0] < 1:
        raise CommandError(f"--k expects positive cut-offs, got {value!r}")
    return tuple(ks)


class Command(BaseCommand):
    help = "Evaluate retrieval quality on judged queries: the project's fixture, or a BEIR dataset (--beir)."

    def add_arguments(self, parser: CommandParser) -> None:
        suites = parser.add_subparsers(dest="suite", required=True, metavar="SUITE")
        retrieval = suites.add_parser("retrieval", help="Recall, MRR and nDCG of search configurations")
        retrieval.add_argument(
            "--beir", type=Path, default=None, help="a BEIR dataset folder (default: fixture)"
        )
        retrieval.add_argument("--split", default="test", help="the qrels split to evaluate (default: test)")
        retrieval.add_argument("--k", default="1,5,10,100", help="cut-offs for Recall@k and nDCG@k")
        retrieval.add_argument(
            "--configs",
            nargs="+",
            default=None,
            metavar="NAME",
            help=f"any of {', '.join(CONFIGS)} (default: all)",
        )
        retrieval.add_argument("--json", type=Path, default=None, help="write a JSON report here")
        retrieval.add_argument(
            "--markdown", type=Path, default=None, help="write a Markdown report (+ PNG chart)"
        )
        retrieval.add_argument(
            "--baseline", type=Path, default=None, help="fail on drops against this baseline"
        )
        retrieval.add_argument(
            "--update-baseline", action="store_true", help="rewrite --baseline from this run"
        )
        retrieval.add_argument(
            "--compare",
            type=Path,
            default=None,
            metavar="EARLIER.json",
            help="print each query's nDCG@10 change against an earlier --json report or a baseline",
        )
        retrieval.add_argument(
            "--failures",
            type=Path,
            default=None,
            metavar="FILE.jsonl",
            help="with --compare: write the queries that dropped (query, expected, got) as JSON lines",
        )
        retrieval.add_argument("--tenant", default=None, help="tenant slug for the corpus (default: derived)")
        retrieval.add_argument("--tolerance", type=float, default=0.01, help="allowed absolute drop (0.01)")
        retrieval.add_argument(
            "--reingest", action="store_true", help="re-ingest a BEIR corpus even when it looks current"
        )
        retrieval.add_argument("--limit-queries", type=int, default=None, help="evaluate the first N queries")
        retrieval.add_argument(
            "--embedders",
            nargs="+",
            default=None,
            metavar="SPEC",
            help="compare these embedders (short names or dotted paths, e.g. local-minilm local-bge-small): "
            "each gets its own copy of the corpus; prints ingest documents/s and each configuration's "
            "quality and query ms per embedder",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        metrics, configs, dataset = self._parse(options)
        beir_root: Path | None = options["beir"]
        tenant = options["tenant"] or (default_tenant_slug(dataset.root) if beir_root else FIXTURE_TENANT)
        if options["embedders"]:
            self._compare_models(options["embedders"], dataset, tenant, configs, metrics, options)
            return
        # The fixture is re-ingested every run (it takes a second), so that a change in chunking shows.
        force = options["reingest"] or beir_root is None
        connector = self._ingest(dataset.root, tenant, force=force).connector
        query_ids = judged_queries(dataset.qrels)[: options["limit_queries"]]
        info = RunInfo(
            dataset.name,
            dataset.split,
            len(query_ids),
            active_embedder().name,
            configured_name("chunker"),
            metrics,
        )
        results = [self._run(connector, dataset, c, metrics, query_ids) for c in configs]
        self.stdout.write(text_table(results, metrics))
        for result in results:
            for warning in result.warnings:
                self.stderr.write(f"warning ({result.name}): {warning}")
        self._write_reports(info, results, options)
        self._compare(info, results, dataset, connector, options)
        self._baseline(info, results, options)

    def _compare_models(
        self,
        specs: list[str],
        dataset: Dataset,
        tenant: str,
        configs: list[EvalConfig],
        metrics: MetricSet,
        options: dict[str, Any],
    ) -> None:
        """The whole evaluation once per embedder, each on its own copy of the corpus, then one table."""
        query_ids = judged_queries(dataset.qrels)[: options["limit_queries"]]
        runs = []
        for spec in dict.fromkeys(specs):
            try:
                embedder = embedder_for(spec)
            except (ImproperlyConfigured, ImportError) as exc:
                raise CommandError(f"--embedders {spec}: {exc}") from None
            with embedder_override(spec):
                self.stdout.write(f"== {spec}: {embedder.name}, {embedder.dimension} dimensions")
                copy = model_tenant_slug(tenant, spec)
                outcome = self._ingest(dataset.root, copy, force=options["reingest"])
                results = [self._run(outcome.connector, dataset, c, metrics, query_ids) for c in configs]
                self.stdout.write(text_table(results, metrics))
            rate = (outcome.documents_per_second, outcome.chunks_per_second)
            runs.append(ModelRun(spec, embedder.name, embedder.dimension, *rate, results))
        self.stdout.write(f"\nmodels on {dataset.name} ({dataset.split}, {len(query_ids)} queries):")
        self.stdout.write(models_table(runs, metrics))
        if options["json"]:
            write_json(
                options["json"],
                {
                    "dataset": dataset.name,
                    "split": dataset.split,
                    "queries": len(query_ids),
                    "models": models_report(runs),
                },  # fmt: skip
            )
            self.stdout.write(f"JSON report: {options['json']}")

    def _parse(self, options: dict[str, Any]) -> tuple[MetricSet, list[EvalConfig], Dataset]:
        if options["embedders"] and (options["baseline"] or options["compare"] or options["markdown"]):
            raise CommandError(
                "--embedders compares models and writes --json only; run --baseline, --compare and "
                "--markdown with one embedder (KNOWLEDGE_EMBEDDER)"
            )
        if options["update_baseline"] and options["baseline"] is None:
            raise CommandError("--update-baseline needs --baseline FILE")
        if options["failures"] and options["compare"] is None:
            raise CommandError("--failures needs --compare EARLIER.json (it lists the queries that dropped)")
        if options["limit_queries"] is not None and options["limit_queries"] < 1:
            raise CommandError("--limit-queries must be at least 1")
        if options["tolerance"] < 0:
            raise CommandError("--tolerance must not be negative")
        metrics = MetricSet(ks=parse_ks(options["k"]))
        try:
            configs = select_configs(options["configs"])
            if options["beir"]:
                return metrics, configs, load_dataset(options["beir"], options["split"])
            return metrics, configs, load_dataset(FIXTURE_DIR, options["split"], "fixture")
        except (FileNotFoundError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        except KnowledgeError as exc:  # a JSON configuration's stages
            raise CommandError(exc.message) from None

    def _ingest(self, root: Path, tenant: str, force: bool) -> IngestOutcome:
        with tqdm(total=beir.corpus_size(root), unit="doc", desc=f"corpus → {tenant}", disable=None) as bar:
            try:
                outcome = corpus_ingest(
                    root=root, tenant_slug=tenant, force=force, on_progress=lambda d, _c: bar.update(d)
                )
            except KnowledgeError as exc:
                raise CommandError(exc.message) from None
        if outcome.stats is None:
            self.stdout.write(
                f"corpus already ingested in {outcome.connector} (same corpus, embedder and chunker)"
            )
        else:
            stats = outcome.stats
            self.stdout.write(
                f"ingested {stats.documents} documents ({stats.written} written, "
                f"{stats.unchanged} unchanged, {outcome.purged} deleted), "
                f"{stats.chunks} chunks in {stats.seconds:.1f} s"
            )
        return outcome

    def _run(
        self, connector: Connector, dataset: Dataset, config: EvalConfig, metrics: MetricSet, ids: list[str]
    ) -> ConfigResult:
        with tqdm(total=len(ids), unit="query", desc=config.name, disable=None) as bar:
            return run_config(
                connector=connector,
                dataset=dataset,
                config=config,
                metrics=metrics,
                query_ids=ids,
                on_query=lambda: bar.update(1),
            )

    def _write_reports(self, info: RunInfo, results: list[ConfigResult], options: dict[str, Any]) -> None:
        if options["json"]:
            write_json(options["json"], json_report(info, results))
            self.stdout.write(f"JSON report: {options['json']}")
        if options["markdown"]:
            chart = markdown_report(info, results, options["markdown"])
            self.stdout.write(f"Markdown report: {options['markdown']} (chart {chart})")

    def _compare(
        self,
        info: RunInfo,
        results: list[ConfigResult],
        dataset: Dataset,
        connector: Connector,
        options: dict[str, Any],
    ) -> None:
        path: Path | None = options["compare"]
        if path is None:
            return
        try:
            earlier = comparing.load_earlier(path)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if (earlier.dataset, earlier.split) != (info.dataset, info.split):
            raise CommandError(
                f"{path} scores {earlier.dataset!r} ({earlier.split}); "
                f"this run is {info.dataset!r} ({info.split})"
            )
        if earlier.embedder not in (None, info.embedder):
            self.stdout.write(f"note: {path} was run with the embedder {earlier.embedder!r}")
        metric = chart_metrics(info.metrics)[0]
        comparisons = comparing.compare(earlier, results, metric)
        if not comparisons:
            names = ", ".join(r.name for r in results)
            raise CommandError(f"{path} has none of the configurations run: {names}")
        for comparison in comparisons:
            self.stdout.write("\n".join(comparing.format_comparison(comparison, dataset.queries)))
        if options["failures"]:
            titles = dict(Document.objects.filter(connector=connector).values_list("external_id", "title"))
            k = int(metric.split("@")[1])
            rows = comparing.failure_rows(comparisons, results, dataset, titles, k)
            comparing.write_jsonl(options["failures"], rows)
            self.stdout.write(f"{len(rows)} dropped queries: {options['failures']}")

    def _baseline(self, info: RunInfo, results: list[ConfigResult], options: dict[str, Any]) -> None:
        path: Path | None = options["baseline"]
        if path is None:
            return
        if options["update_baseline"]:
            baselines.write_baseline(path, info, results)
            self.stdout.write(f"baseline written: {path}")
            return
        try:
            recorded = baselines.load_baseline(path)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        problems = baselines.mismatches(recorded, info)
        problems += [f"regression: {d}" for d in baselines.drops(recorded, results, options["tolerance"])]
        if problems:
            raise CommandError("retrieval evals failed against the baseline:\n  " + "\n  ".join(problems))
        self.stdout.write(f"no metric dropped by more than {options['tolerance']} against {path}")
