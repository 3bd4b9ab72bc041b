"""Adapters for the ports: cloud/emulator ones and embedded ones are peers."""
