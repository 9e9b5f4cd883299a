"""DELEGATE-52 domains: the paper's category of each domain and its primary element-count keys.

Counts: where an evaluator logs several ref/gen pairs, the first listed in
docs/formats/delegate52.md §11 is the primary element. Domains with no pair (foodmenu and recipe log
generated counts only; json, python, fiction log none) give NULL counts.
"""

from __future__ import annotations

CODE, SCIENCE, CREATIVE, RECORDS, EVERYDAY = (
    "Code & Config", "Science & Eng", "Creative & Media", "Structured Records", "Everyday")

# domain -> (category, ref count key, gen count key)
DOMAINS: dict[str, tuple[str, str | None, str | None]] = {
    "accounting": (RECORDS, "ref_transaction_count", "gen_transaction_count"),
    "audiosyn": (CREATIVE, "ref_instrument_count", "gen_instrument_count"),
    "aviation": (SCIENCE, "ref_notam_count", "gen_notam_count"),
    "calendar": (RECORDS, "ref_event_count", "gen_event_count"),
    "chess": (EVERYDAY, "ref_move_count", "gen_move_count"),
    "circuit": (SCIENCE, "ref_subckt_count", "gen_subckt_count"),
    "crystal": (SCIENCE, "ref_atom_count", "gen_atom_count"),
    "dbschema": (CODE, "ref_table_count", "gen_table_count"),
    "dns": (CODE, "ref_record_sets", "gen_record_sets"),
    "docker": (CODE, "ref_stage_count", "gen_stage_count"),
    "earncall": (EVERYDAY, "count_turns_reference", "count_turns_generated"),
    "edifact": (RECORDS, "ref_message_count", "gen_message_count"),
    "emails": (RECORDS, "ref_message_count", "gen_message_count"),
    "fiction": (CREATIVE, None, None),
    "filesystem": (CODE, "ref_entry_count", "gen_entry_count"),
    "fonteng": (CREATIVE, "ref_classes", "gen_classes"),
    "foodmenu": (EVERYDAY, None, None),
    "genealogy": (RECORDS, "ref_individual_count", "gen_individual_count"),
    "geodata": (RECORDS, "ref_count", "gen_count"),
    "geotrack": (RECORDS, "ref_waypoints", "gen_waypoints"),
    "graphviz": (CODE, "ref_node_count", "gen_node_count"),
    "hamradio": (RECORDS, "ref_qso_count", "gen_qso_count"),
    "infra": (CODE, "ref_blocks", "gen_blocks"),
    "jobboard": (EVERYDAY, "ref_job_count", "gen_job_count"),
    "json": (CODE, None, None),
    "landmarks": (EVERYDAY, "ref_count", "gen_count"),
    "latex": (CREATIVE, "ref_entry_count", "gen_entry_count"),
    "libcatalog": (RECORDS, "ref_record_count", "gen_record_count"),
    "makefile": (CODE, "ref_target_count", "gen_target_count"),
    "malware": (CODE, "ref_rule_count", "gen_rule_count"),
    "mathlean": (SCIENCE, "ref_declaration_count", "gen_declaration_count"),
    "molecule": (SCIENCE, "ref_molecule_count", "gen_molecule_count"),
    "musicsheet": (CREATIVE, "ref_note_count", "gen_note_count"),
    "obj3d": (CREATIVE, "ref_groups", "gen_groups"),
    "playlist": (EVERYDAY, "ref_track_count", "gen_track_count"),
    "protein": (SCIENCE, "ref_atom_count", "gen_atom_count"),
    "python": (CODE, None, None),
    "quantum": (SCIENCE, "ref_subroutine_count", "gen_subroutine_count"),
    "recipe": (EVERYDAY, None, None),
    "robotics": (SCIENCE, "ref_links", "gen_links"),
    "satellite": (SCIENCE, "ref_entry_count", "gen_entry_count"),
    "screenplay": (CREATIVE, "ref_dialogue_count", "gen_dialogue_count"),
    "slides": (CREATIVE, "ref_slides", "gen_slides"),
    "spreadsheet": (RECORDS, "ref_row_count", "gen_row_count"),
    "starcatalog": (SCIENCE, "ref_fields", "gen_fields"),
    "subtitles": (CREATIVE, "ref_entry_count", "gen_entry_count"),
    "transit": (EVERYDAY, "ref_file_count", "gen_file_count"),
    "translation": (CODE, "ref_entry_count", "gen_entry_count"),
    "treebank": (RECORDS, "ref_sentence_count", "gen_sentence_count"),
    "vector": (CREATIVE, "ref_element_count", "gen_element_count"),
    "weather": (SCIENCE, "ref_metar_count", "gen_metar_count"),
    "weaving": (CREATIVE, "ref_threading_count", "gen_threading_count"),
}

# Evaluator classes outside the 52 (not part of the benchmark, but they may appear in logs).
EXTRA_DOMAINS: dict[str, tuple[str, str | None, str | None]] = {
    "audio": ("Extra (audio)", "ref_duration", "gen_duration"),
    "image": ("Extra (visual)", "ref_size", "gen_size"),
}


def domain_info(domain: str) -> tuple[str | None, str | None, str | None]:
    """(category, ref key, gen key); unknown domains get no category and no counts."""
    return DOMAINS.get(domain) or EXTRA_DOMAINS.get(domain) or (None, None, None)
