"""Discovery: metadata-only listing, clashes, directory engines, allow/block lists."""

from __future__ import annotations

import sys

import pytest

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.discovery.engines import (
    ENGINE_GROUP,
    EngineLoadError,
    PluginPolicy,
    find_entries,
    list_engines,
    load_engine_factory,
)

from .distfactory import engine_module, make_dist


def by_name(entries, name):
    return [e for e in entries if e.name == name]


def test_listing_reads_metadata_without_importing(site, tmp_path):
    marker = tmp_path / "imported"
    make_dist(
        site,
        "tpe-alpha",
        "2.3",
        {ENGINE_GROUP: {"alpha": "tpe_alpha:AlphaEngine"}},
        {"tpe_alpha.py": engine_module("AlphaEngine", "alpha", marker=marker)},
    )
    [entry] = by_name(list_engines(), "alpha")
    assert (entry.distribution, entry.version, entry.source) == ("tpe-alpha", "2.3", "entry-point")
    assert entry.value == "tpe_alpha:AlphaEngine"
    assert entry.warnings == [] and entry.error is None
    assert not marker.exists()
    assert "tpe_alpha" not in sys.modules
    # Loading imports it (proving the marker would have shown an import).
    assert issubclass(load_engine_factory(entry), ContextEngine)
    assert marker.exists()


def test_listing_is_cached_per_process(site):
    make_dist(site, "tpe-one", "1", {ENGINE_GROUP: {"one": "tpe_one:E"}})
    assert by_name(list_engines(), "one")
    make_dist(site, "tpe-two", "1", {ENGINE_GROUP: {"two": "tpe_two:E"}})
    assert not by_name(list_engines(), "two")  # cached
    from ctxengine_host.discovery.engines import clear_cache

    clear_cache()
    assert by_name(list_engines(), "two")


def test_ours_are_listed_with_builtin(site):
    names = {e.name: e for e in list_engines()}
    assert names["legacy"].distribution == "ctxengine-legacy"
    assert names["builtin-last-resort"].source == "built-in"


def test_two_distributions_claiming_a_name_are_both_listed_with_warnings(site):
    make_dist(site, "tpe-a", "1", {ENGINE_GROUP: {"twin": "tpe_a:E"}})
    make_dist(site, "tpe-b", "1", {ENGINE_GROUP: {"twin": "tpe_b:E"}})
    claims = by_name(list_engines(), "twin")
    assert {c.distribution for c in claims} == {"tpe-a", "tpe-b"}
    assert "'tpe-b'" in claims[0].warnings[0] and "'tpe-a'" in claims[1].warnings[0]


def test_a_distribution_found_twice_on_the_path_counts_once(tmp_path, monkeypatch):
    for where in ("first", "second"):
        make_dist(tmp_path / where, "tpe-dup", "1", {ENGINE_GROUP: {"dup": "tpe_dup:E"}})
        monkeypatch.syspath_prepend(str(tmp_path / where))
    [entry] = by_name(list_engines(), "dup")
    assert entry.warnings == []


def test_directory_engine_with_yaml_manifest(plugins_dir):
    eng = plugins_dir / "dirwin"
    eng.mkdir()
    (eng / "plugin.yaml").write_text('# a comment\nname: dirwin\nversion: "0.3"\n')
    (eng / "__init__.py").write_text(engine_module("DirEngine", "dirwin"))
    [entry] = by_name(list_engines(), "dirwin")
    assert (entry.source, entry.version, entry.distribution) == ("directory", "0.3", None)
    assert entry.location == str(eng)
    engine_cls = load_engine_factory(entry)
    assert engine_cls.name == "dirwin"


def test_directory_engine_with_register_and_second_registration_rejected(plugins_dir):
    eng = plugins_dir / "reg"
    eng.mkdir()
    (eng / "plugin.toml").write_text('name = "reg"\n')
    (eng / "helpers.py").write_text("LABEL = 'from a sibling module'\n")
    (eng / "__init__.py").write_text(
        engine_module(
            "RegEngine",
            "reg",
            extra="""
            from .helpers import LABEL


            def register(ctx):
                first = RegEngine(config=ctx.config, context=ctx.context)
                first.label = LABEL
                ctx.register_context_engine(first)
                ctx.register_context_engine(RegEngine())
            """,
        )
    )
    [entry] = by_name(list_engines(), "reg")
    engine = load_engine_factory(entry)(config={"k": 1}, context=None)
    assert engine.label == "from a sibling module" and engine.config == {"k": 1}


def test_register_that_registers_nothing_is_an_error(plugins_dir):
    eng = plugins_dir / "lazy"
    eng.mkdir()
    (eng / "plugin.toml").write_text("")
    (eng / "__init__.py").write_text("def register(ctx):\n    pass\n")
    [entry] = by_name(list_engines(), "lazy")
    with pytest.raises(EngineLoadError, match="register_context_engine"):
        load_engine_factory(entry)()


def test_two_directories_with_one_manifest_name_keep_their_directory_names(plugins_dir):
    for folder in ("a_first", "b_second"):
        eng = plugins_dir / folder
        eng.mkdir()
        (eng / "plugin.toml").write_text('name = "same"\n')
        (eng / "__init__.py").write_text("")
    entries = list_engines()
    assert not find_entries("same", entries)  # the shared alias selects neither
    for folder in ("a_first", "b_second"):
        [entry] = by_name(entries, folder)
        assert entry.aliases == [] and "also claimed by another directory" in entry.warnings[0]


def test_directory_engine_is_selected_by_directory_and_manifest_name(plugins_dir):
    eng = plugins_dir / "hermes-thing"
    eng.mkdir()
    (eng / "plugin.yaml").write_text(
        "name: thing-plugin\nversion: 0.8\nprovides_tools:\n  - thing_grep\n  - thing_x\n"
    )
    (eng / "__init__.py").write_text("")
    entries = list_engines()
    [entry] = by_name(entries, "hermes-thing")
    assert entry.aliases == ["thing-plugin"] and entry.version == "0.8"
    assert find_entries("thing-plugin", entries) == [entry]
    assert find_entries("hermes-thing", entries) == [entry]


def test_installed_distribution_wins_over_directory_engine(site, plugins_dir):
    make_dist(site, "tpe-clash", "1", {ENGINE_GROUP: {"clash": "tpe_clash:E"}})
    eng = plugins_dir / "clash"
    eng.mkdir()
    (eng / "plugin.toml").write_text("")
    (eng / "__init__.py").write_text("")
    [entry] = by_name(list_engines(), "clash")
    assert entry.source == "entry-point"
    assert "installed distribution wins" in entry.warnings[0]


@pytest.mark.parametrize(
    ("filename", "text", "expected"),
    [
        ("plugin.yaml", "name: x\n  nested: 1\n", "invalid YAML"),
        ("plugin.yaml", "tags: [a, b\n", "invalid YAML"),
        ("plugin.yaml", "name: a\nname: b\n", "given twice"),
        ("plugin.yaml", "a: &x [1, 2]\nb: *x\n", "anchors and aliases"),
        ("plugin.yaml", "a: " + "[" * 12 + "]" * 12 + "\n", "nested deeper than"),
        ("plugin.yaml", "- a\n- b\n", "a mapping of keys"),
        ("plugin.yaml", "name: x\n" + "# pad\n" * 20000, "byte limit"),
        ("plugin.toml", "name = [\n", "invalid TOML"),
        ("plugin.toml", "version = 1.0\n", "'version' must be a string"),
        ("plugin.toml", 'name = "bad name!"\n', "not a valid engine id"),
    ],
)
def test_malformed_manifest_marks_the_entry_unusable(plugins_dir, filename, text, expected):
    eng = plugins_dir / "broken"
    eng.mkdir()
    (eng / filename).write_text(text)
    (eng / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    [entry] = by_name(list_engines(), "broken")
    assert expected in entry.error and filename in entry.error
    with pytest.raises(EngineLoadError):
        load_engine_factory(entry)


def test_directory_without_manifest_or_init(plugins_dir):
    (plugins_dir / "nomanifest").mkdir()
    (plugins_dir / "nomanifest" / "__init__.py").write_text("")
    (plugins_dir / "noinit").mkdir()
    (plugins_dir / "noinit" / "plugin.toml").write_text("")
    (plugins_dir / "__pycache__").mkdir()
    entries = list_engines()
    assert "no plugin.toml or plugin.yaml" in by_name(entries, "nomanifest")[0].error
    assert "no __init__.py" in by_name(entries, "noinit")[0].error
    assert not by_name(entries, "__pycache__")


def test_plugins_dir_from_config_when_env_unset(tmp_path):
    eng = tmp_path / "cfgplugins" / "cfgeng"
    eng.mkdir(parents=True)
    (eng / "plugin.toml").write_text("")
    (eng / "__init__.py").write_text("")
    assert by_name(list_engines(plugins_directory=tmp_path / "cfgplugins"), "cfgeng")


def test_allowlist_and_blocklist(site, monkeypatch):
    make_dist(site, "tpe-allowed", "1", {ENGINE_GROUP: {"allowed": "tpe_allowed:E"}})
    make_dist(site, "tpe-other", "1", {ENGINE_GROUP: {"other": "tpe_other:E"}})
    monkeypatch.setenv("CTXENGINE_LOAD_PLUGINS", "TPE_Allowed")
    entries = list_engines()
    assert by_name(entries, "allowed")[0].error is None
    assert "CTXENGINE_LOAD_PLUGINS" in by_name(entries, "other")[0].error
    assert by_name(entries, "legacy")[0].error is None  # ours are always allowed

    monkeypatch.setenv("CTXENGINE_LOAD_PLUGINS", "")
    entries = list_engines()
    assert by_name(entries, "allowed")[0].error is not None
    assert by_name(entries, "lcm")[0].error is None

    monkeypatch.delenv("CTXENGINE_LOAD_PLUGINS")
    monkeypatch.setenv("CTXENGINE_BLOCK_PLUGINS", "other, lcm")
    entries = list_engines()
    assert "CTXENGINE_BLOCK_PLUGINS" in by_name(entries, "other")[0].error
    assert "CTXENGINE_BLOCK_PLUGINS" in by_name(entries, "lcm")[0].error
    assert by_name(entries, "allowed")[0].error is None


def test_policy_from_env_parsing():
    policy = PluginPolicy.from_env(
        {"CTXENGINE_LOAD_PLUGINS": " a_b ,c.D,,", "CTXENGINE_BLOCK_PLUGINS": "x"}
    )
    assert policy.allowed == frozenset({"a-b", "c-d"})
    assert policy.blocked == frozenset({"x"})
    assert PluginPolicy.from_env({}).allowed is None


def test_broken_entry_point_raises_load_error_naming_it(site):
    make_dist(
        site,
        "tpe-broken",
        "1",
        {ENGINE_GROUP: {"broken": "tpe_broken:E"}},
        {"tpe_broken.py": "raise ImportError('no such dependency: frobnicate')\n"},
    )
    [entry] = by_name(list_engines(), "broken")
    with pytest.raises(EngineLoadError, match=r"tpe-broken.*frobnicate"):
        load_engine_factory(entry)


def test_distributions_inside_a_zip_on_the_path(tmp_path, monkeypatch):
    import zipfile

    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("tpe_zipped-4.5.dist-info/METADATA", "Name: tpe-zipped\nVersion: 4.5\n\n")
        zf.writestr(
            "tpe_zipped-4.5.dist-info/entry_points.txt",
            f"[{ENGINE_GROUP}]\nzipped = tpe_zipped:ZippedEngine\n",
        )
        zf.writestr("tpe_zipped.py", engine_module("ZippedEngine", "zipped"))
    monkeypatch.syspath_prepend(str(archive))
    [entry] = by_name(list_engines(), "zipped")
    assert (entry.distribution, entry.version) == ("tpe-zipped", "4.5")
    assert load_engine_factory(entry).name == "zipped"
    sys.modules.pop("tpe_zipped", None)


def test_registrar_rejects_a_second_registration_with_a_warning():
    from ctxengine_host.discovery.engines import EngineRegistrar

    registrar = EngineRegistrar("reg")
    first, second = object(), object()
    registrar.register_context_engine(first)
    registrar.register_context_engine(second)
    assert registrar.engine is first
    assert "one registration per name" in registrar.warnings[0]


def test_listing_stays_cheap_yaml_only_for_yaml_manifests(tmp_path):
    """`ctxengine engines` imports no pydantic or compat layer; PyYAML only for plugin.yaml."""
    import subprocess
    import sys

    for folder, manifest, text in (("t", "plugin.toml", 'name = "t"\n'), ("y", "plugin.yaml", "")):
        plugins = tmp_path / folder
        (plugins / "eng").mkdir(parents=True)
        (plugins / "eng" / manifest).write_text(text or "name: y\nprovides_tools:\n  - a\n")
        (plugins / "eng" / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    script = (
        "import os, sys\n"
        "from ctxengine_host.discovery.engines import list_engines\n"
        "for folder in ('t', 'y'):\n"
        "    os.environ['CTXENGINE_PLUGINS_DIR'] = os.path.join(sys.argv[1], folder)\n"
        "    list_engines()\n"
        "    heavy = ('pydantic', 'yaml', 'ctxengine_host.discovery.compat')\n"
        "    print(folder, sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:2] == ["t []", "y ['yaml']"]
