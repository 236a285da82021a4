"""The host's state: the state directory (one owner, private files), the binding store,
recovery at open (the lease sweep, turns left open) and the reader of a state directory another
process owns.
"""
