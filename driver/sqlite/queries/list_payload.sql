-- The payload filter of a listing: the value at a dotted path, as text
-- (true and false as words, like the other databases). Every parameter
-- but the last is the path; the last is the value.
COALESCE(CASE json_type(payload, '$."' || replace(?, '.', '"."') || '"') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END,
         CAST(json_extract(payload, '$."' || replace(?, '.', '"."') || '"') AS TEXT)) = ?
