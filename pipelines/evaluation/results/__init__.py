"""Result types the evaluation's layers share: the bottom layer of pipelines.evaluation, importing
none of it.

A run's steps (runs/) write them, coverage/ and statistics/ compute them, outputs/ render them; each
imports them from here, so no layer reaches up into another for a type (pyproject.toml's
import-linter contract).
"""
