"""Fusers merge the ranked lists of several lanes into one ranking."""
