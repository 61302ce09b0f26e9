//! Plain tables like kubectl prints them: no borders, uppercase headers,
//! columns padded to their widest cell and separated by three spaces.

/// The space between two columns.
pub const COLUMN_GAP: &str = "   ";

/// A table: headers and rows of cells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these headers.
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        Table { headers: headers.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Adds a row (missing cells print empty, extra cells are kept).
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The width of each column: its widest cell, header included (in chars).
    pub fn widths(&self) -> Vec<usize> {
        let columns = self.rows.iter().map(Vec::len).chain([self.headers.len()]).max().unwrap_or(0);
        (0..columns)
            .map(|i| {
                std::iter::once(&self.headers)
                    .chain(&self.rows)
                    .filter_map(|row| row.get(i))
                    .map(|cell| cell.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The header line, padded to `widths`.
    pub fn header_line(&self, widths: &[usize]) -> String {
        render_line(&self.headers, widths)
    }

    /// The whole table, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let widths = self.widths();
        let mut text = self.header_line(&widths);
        text.push('\n');
        for row in &self.rows {
            text.push_str(&render_line(row, &widths));
            text.push('\n');
        }
        text
    }
}

/// One line of cells, each padded to its column's width except the last
/// (no trailing spaces); cells wider than their column push the rest right.
pub fn render_line(cells: &[String], widths: &[usize]) -> String {
    let mut line = String::new();
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            line.push_str(COLUMN_GAP);
        }
        line.push_str(cell);
        if i + 1 < cells.len() {
            let width = widths.get(i).copied().unwrap_or(0);
            let pad = width.saturating_sub(cell.chars().count());
            line.extend(std::iter::repeat_n(' ', pad));
        }
    }
    let end = line.trim_end().len();
    line.truncate(end);
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn aligns_columns_with_three_spaces() {
        let mut t = Table::new(["NAME", "AGE"]);
        t.push(row(&["a", "5d"]));
        t.push(row(&["longer-name", "45s"]));
        assert_eq!(t.render(), "NAME          AGE\na             5d\nlonger-name   45s\n");
    }

    #[test]
    fn header_wider_than_cells_sets_the_width() {
        let mut t = Table::new(["NAMESPACE", "NAME", "AGE"]);
        t.push(row(&["ns", "x", "1m"]));
        assert_eq!(t.render(), "NAMESPACE   NAME   AGE\nns          x      1m\n");
    }

    #[test]
    fn no_trailing_spaces_and_unicode_widths() {
        let mut t = Table::new(["A", "B"]);
        t.push(row(&["ééé", ""]));
        let text = t.render();
        assert!(text.lines().all(|l| !l.ends_with(' ')), "{text:?}");
        assert_eq!(text, "A     B\nééé\n");
    }

    #[test]
    fn render_line_pushes_wide_cells_right() {
        assert_eq!(render_line(&row(&["toolong", "x"]), &[3, 1]), "toolong   x");
    }

    #[test]
    fn widths_cover_ragged_rows() {
        let mut t = Table::new(["A"]);
        t.push(row(&["a", "bbbb"]));
        assert_eq!(t.widths(), vec![1, 4]);
    }
}
