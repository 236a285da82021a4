"""Host-facing operations beyond the adapter contract: model catalogs, one-shot text and the
transcript a hand-off carries.
"""
