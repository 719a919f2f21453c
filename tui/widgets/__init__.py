"""The dashboard's panels: each renders only the LiveView it is bound to."""
