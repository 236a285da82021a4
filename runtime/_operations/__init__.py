"""The operation table (every public operation declared once), its wire forms over
``paddock serve``, and the open requests the ``pending_requests`` operation reads.
"""
