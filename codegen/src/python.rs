//! The Python dataclasses of the response's typed parts.

use serde_json::Value;

/// The Python type of a field.
fn type_of(field: &Value) -> String {
    let base = match field["type"].as_str().unwrap_or("object") {
        "integer" => "int",
        "number" => "float",
        "boolean" => "bool",
        "objects" => "List[Dict[str, Any]]",
        "object" => "Dict[str, Any]",
        // Strings and the enums' string values.
        _ => "str",
    };
    if field["nullable"] == true {
        format!("Optional[{base}]")
    } else {
        base.to_string()
    }
}

/// A field's value when the core's JSON leaves it out.
fn absent(field: &Value) -> &'static str {
    if field["nullable"] == true {
        return "None";
    }
    match field["type"].as_str().unwrap_or("") {
        "integer" => "0",
        "number" => "0.0",
        "boolean" => "False",
        "objects" => "[]",
        "object" => "{}",
        _ => "\"\"",
    }
}

/// How `_from` reads a field from the core's dict `d`.
fn read(field: &Value) -> String {
    let path: Vec<&str> = field["path"]
        .as_array()
        .map(|p| p.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match path.as_slice() {
        [key] if field["required"] == true => format!("d[{key:?}]"),
        [key] => format!("d.get({key:?}, {})", absent(field)),
        _ => format!(
            "_at(d, {})",
            path.iter()
                .map(|k| format!("{k:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A docstring's text: `"""` and backslashes made safe, lines indented by `indent`.
fn docstring(doc: &Value, indent: &str) -> String {
    let text = doc
        .as_str()
        .unwrap_or("")
        .replace('\\', "\\\\")
        .replace("\"\"\"", "\\\"\\\"\\\"");
    let lines: Vec<&str> = text.lines().collect();
    match lines.as_slice() {
        [] => String::new(),
        [one] => format!("{indent}\"\"\"{one}\"\"\"\n"),
        [first, rest @ ..] => {
            let mut out = format!("{indent}\"\"\"{first}\n");
            for line in rest {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    out.push_str(&format!("{indent}{line}\n"));
                }
            }
            out.push_str(&format!("{indent}\"\"\"\n"));
            out
        }
    }
}

/// One frozen dataclass: its fields (each with its doc), `raw` (the dict as the core sent
/// it), and `_from`, which reads it from that dict.
fn dataclass(name: &str, view: &Value) -> String {
    let mut out = format!("@dataclass(frozen=True)\nclass {name}:\n");
    out.push_str(&docstring(&view["doc"], "    "));
    out.push('\n');
    let fields = view["fields"].as_array().cloned().unwrap_or_default();
    for f in &fields {
        out.push_str(&format!(
            "    {}: {}\n",
            f["name"].as_str().unwrap_or(""),
            type_of(f)
        ));
        out.push_str(&docstring(&f["doc"], "    "));
    }
    out.push_str(
        "    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)\n",
    );
    out.push_str("    \"\"\"The part as the core sent it (snake_case, durations in ms).\"\"\"\n\n");
    out.push_str("    @classmethod\n");
    out.push_str(&format!(
        "    def _from(cls, d: Dict[str, Any]) -> \"{name}\":\n        return cls(\n"
    ));
    for f in &fields {
        out.push_str(&format!(
            "            {}={},\n",
            f["name"].as_str().unwrap_or(""),
            read(f)
        ));
    }
    out.push_str("            raw=d,\n        )\n");
    out
}

/// The generated region of `_types.py`.
pub(crate) fn dataclasses(views: &Value) -> String {
    let mut out = String::from(
        "def _at(d: Dict[str, Any], *path: str) -> Any:\n    \"\"\"The value at `path` in nested dicts, or None where a part is missing.\"\"\"\n    for key in path:\n        if not isinstance(d, dict) or d.get(key) is None:\n            return None\n        d = d[key]\n    return d\n\n\n",
    );
    let classes = [
        ("Usage", "usage"),
        ("Timings", "timings"),
        ("Decision", "decision"),
    ];
    let rendered: Vec<String> = classes
        .iter()
        .map(|(name, key)| dataclass(name, &views[*key]))
        .collect();
    out.push_str(&rendered.join("\n\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_nested_field_is_read_through_its_path_and_a_nullable_one_is_optional() {
        let f = json!({"name": "inter_token_p50_ms", "path": ["inter_token", "p50_ms"], "type": "number", "nullable": true, "required": false});
        assert_eq!(type_of(&f), "Optional[float]");
        assert_eq!(read(&f), "_at(d, \"inter_token\", \"p50_ms\")");
        let g = json!({"name": "input_tokens", "path": ["input_tokens"], "type": "integer", "nullable": false, "required": true});
        assert_eq!(read(&g), "d[\"input_tokens\"]");
        let h = json!({"name": "reasoning_tokens", "path": ["reasoning_tokens"], "type": "integer", "nullable": false, "required": false});
        assert_eq!(read(&h), "d.get(\"reasoning_tokens\", 0)");
    }

    #[test]
    fn a_doc_with_quotes_stays_one_docstring() {
        let d = docstring(&json!("say \"\"\" here\nand there"), "    ");
        assert_eq!(d.matches("\"\"\"").count(), 2);
    }
}
