-- History search reads each script group's windows on their own (docs/adr/0138). The
-- relevance sample is each group's first windows in id order: a range of the first btree,
-- which also serves every (org_id, model) range and so replaces (org_id, model, id). The
-- rest of a group is read in heap order through the second: its equal keys are kept in heap
-- order, where the first would visit them in id order, one random read each (2x the cost
-- of the same rows read in heap order, measured at 10,000 windows).
CREATE INDEX dw_message_embeddings_org_model_group_id_idx
    ON dw_message_embeddings (org_id, model, script_group, id);
CREATE INDEX dw_message_embeddings_org_model_group_idx
    ON dw_message_embeddings (org_id, model, script_group);
DROP INDEX dw_message_embeddings_org_model_id_idx;

-- A search filtered to one channel or to recent windows reads those windows, not the org's
-- (docs/adr/0139): the planner can choose these when the filter keeps few rows.
CREATE INDEX dw_message_embeddings_org_model_channel_idx
    ON dw_message_embeddings (org_id, model, external_channel_id);
CREATE INDEX dw_message_embeddings_org_model_last_idx
    ON dw_message_embeddings (org_id, model, last_occurred_at);
