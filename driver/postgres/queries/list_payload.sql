-- The payload filter of a listing: the value at a dotted path, as text.
-- Every parameter but the last is the path; the last is the value.
payload #>> string_to_array(?, '.') = ?
