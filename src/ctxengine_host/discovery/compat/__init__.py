"""Compatibility with the Python agent framework whose ``ContextEngine`` ABC we follow.

Both directions:

* framework-style plugin directories load unchanged (:func:`load_plugin_directory`;
  ``agent.context_engine`` and ``agent.context_compressor`` are provided while no
  real module of that name is installed);
* any ctxengine engine is exposed with the framework's method set
  (:class:`FrameworkEngineAdapter`), checked against the capabilities such a
  host offers (:data:`FRAMEWORK_HOST_CAPABILITIES`).

docs/compat.md maps the three vocabularies (ours, the framework's, the gateway's).
"""

from .adapter import (
    FRAMEWORK_HOST_CAPABILITIES,
    FrameworkEngineAdapter,
    HostRequirementError,
    with_system_addition,
)
from .loader import (
    PluginRegistrar,
    exported_engine_classes,
    import_plugin_package,
    load_plugin_directory,
    plugin_name,
)
from .shims import install_framework_shims, is_shim, uninstall_framework_shims

__all__ = [
    "FRAMEWORK_HOST_CAPABILITIES",
    "FrameworkEngineAdapter",
    "HostRequirementError",
    "PluginRegistrar",
    "exported_engine_classes",
    "import_plugin_package",
    "install_framework_shims",
    "is_shim",
    "load_plugin_directory",
    "plugin_name",
    "uninstall_framework_shims",
    "with_system_addition",
]
