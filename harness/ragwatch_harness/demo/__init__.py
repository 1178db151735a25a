"""Offline demo data: a documentation corpus and realistic production traces."""
