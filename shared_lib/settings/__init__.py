"""The one settings model: the only reader of the environment (``model``), and the deploy
contract it implies (``contract``)."""

from shared_lib.settings.contract import deploy_contract, fields_for, required_names
from shared_lib.settings.model import CLOUD_ENVS, LOCAL_ENVS, Settings

__all__ = ["CLOUD_ENVS", "LOCAL_ENVS", "Settings", "deploy_contract", "fields_for", "required_names"]
