"""Offline retrieval evaluation: judged queries, ranking metrics, configurations, reports and baselines."""
