-- DecisionBench step tagger (the DecisionBench paper §3.4 and App. D; docs/formats/decisionbench.md): one skill, or NULL for none, per orchestrator completion step.
--
-- Rules in priority order. Tool branch: (1) only call_model/read_profile ->
-- _infra_delegation; (2) a calculator-like tool, or >= 3 numeric tokens in the step's
-- tool arguments taken together -> numerical_computation; (3) a retrieval-like tool name
-- (substring match) -> information_retrieval; (4) else tool_schema_adherence. Text branch:
-- (5) tau and the text matches the policy regex -> domain_policy_compliance; (6) prompt
-- >= 15,000 tokens -> long_input_handling; (7) gaia with >= 2 earlier tool calls ->
-- multi_step_reasoning, gaia otherwise none; (8) tau or bfcl -> multi_turn_state_tracking.
-- The gaps written "..." in the rules match up to 60 characters on one line.
-- tracewh: materialize by run_id within dcb_runs
CREATE OR REPLACE VIEW dcb_step_skills AS
SELECT
    run_id, trace_id, task_id, step, model, suite,
    CASE
        WHEN array_length(tool_names) > 0 THEN CASE
            WHEN array_length(list_filter(tool_names, lambda t: t NOT IN ('call_model', 'read_profile'))) = 0
                THEN '_infra_delegation'
            WHEN array_length(list_filter(tool_names, lambda t: t IN ('calculator', 'evaluate_expression', 'eval_python',
                                                              'python_eval', 'math_eval', 'compute'))) > 0
                 OR array_length(regexp_extract_all(arguments, '\b\d+(?:\.\d+)?\b')) >= 3
                THEN 'numerical_computation'
            WHEN array_length(list_filter(tool_names, lambda t: regexp_matches(t,
                    'web_search|search|fetch_url|browse|find_user_id|find_user|lookup|get_user_details|get_order|'
                    || 'list_orders|get_product|list_products|get_reservation|list_reservation|search_direct_flight|'
                    || 'search_onestop_flight|parse_pdf|extract_table|ocr|read_document'))) > 0
                THEN 'information_retrieval'
            ELSE 'tool_schema_adherence'
        END
        WHEN suite = 'tau' AND regexp_matches(content,
                '(?i)against[^\n]{0,60}policy|not permitted|i cannot[^\n]{0,60}policy|transfer[^\n]{0,60}human agent|'
                || 'outside (my|our) scope|please confirm|i (will )?need (your )?confirmation')
            THEN 'domain_policy_compliance'
        WHEN prompt_tokens >= 15000 THEN 'long_input_handling'
        WHEN suite = 'gaia' THEN CASE WHEN prior_tool_calls >= 2 THEN 'multi_step_reasoning' END
        WHEN suite IN ('tau', 'bfcl') THEN 'multi_turn_state_tracking'
    END AS skill,
    'tracewh-sql-1' AS tagger_version
FROM dcb_steps;
