"""The dashboard's panels: each renders only the LiveSnapshot it is bound to."""
