"""Arithmetic word problems with an integer answer: the worked example of docs/domains.md."""
