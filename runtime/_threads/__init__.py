"""The thread directory: the one owner of session status.
"""
