"""Ingest jobs: submit API documents for background writing, run them on `bulk` workers, cancel, resume."""

from knowledge.services.jobs.run import RunOutcome, job_run
from knowledge.services.jobs.submit import Submitted, job_cancel, job_submit, jobs_purge, jobs_resume

__all__ = ["RunOutcome", "Submitted", "job_cancel", "job_run", "job_submit", "jobs_purge", "jobs_resume"]
