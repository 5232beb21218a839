"""Folders registered under names of their own: ``lfabench data add NAME PATH --as imagefolder`` (or
``--as retrieval_folder``) makes ``NAME`` a dataset plugin that reads ``PATH`` with that folder plugin.

Each registered folder is its own dataset: ``lfabench run dataset=NAME`` composes the folder plugin's protocol,
records name ``NAME``, and the dataset fingerprint is of that folder's files (two folders, two fingerprints; a
board keeps their tables apart). The entries live in the data registry (:func:`lfabench.dataroot.registered_as`);
this module declares one plugin per entry whenever the plugins are loaded.
"""

from __future__ import annotations

import functools

from lfabench.sdk import PluginSpec, default_params, hookimpl, registered_as

from . import imagefolder, retrieval_folder

#: The plugins a folder can be registered ``--as``: ``{plugin: (factory, protocol, what the folder holds)}``.
FOLDER_PLUGINS = {
    "imagefolder": (imagefolder.load_imagefolder, imagefolder.PROTOCOL,
                    "one subfolder of images per class, classification"),
    "retrieval_folder": (retrieval_folder.load_retrieval_folder, retrieval_folder.PROTOCOL,
                         "images with a ground-truth file, retrieval"),
}


def folder_spec(name: str, plugin: str) -> PluginSpec:
    """The dataset plugin ``name``: ``plugin``'s factory reading the folder registered as ``name``."""
    if plugin not in FOLDER_PLUGINS:
        raise ValueError(f"data registry: {name!r} is registered as {plugin!r}, which is not a folder plugin "
                         f"({', '.join(FOLDER_PLUGINS)}); register it again with `lfabench data add {name} PATH "
                         f"--as imagefolder`")
    factory, protocol, holds = FOLDER_PLUGINS[plugin]
    defaults = dict(default_params(factory), name=name)
    return PluginSpec(name, functools.partial(factory, name=name),
                      f"{name}: your own folder read as {plugin}; {holds}", defaults=defaults,
                      manual=f"`lfabench data add {name} PATH --as {plugin}` or dataset.params.root=PATH",
                      protocol=protocol)


@hookimpl
def lfabench_datasets():
    return [folder_spec(name, plugin) for name, plugin in sorted(registered_as().items())]
