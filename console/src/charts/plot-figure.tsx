import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * Hosts a chart drawn by Observable Plot: `draw` gets the width available and returns the element
 * Plot made; it is drawn again when the container's width or `data` changes.
 */
export function PlotFigure({ draw, data, label }: { draw: (width: number) => Element; data: unknown; label: string }) {
  const host = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);

  useEffect(() => {
    const element = host.current;
    if (element === null) return undefined;
    const observer = new ResizeObserver(([entry]) => {
      if (entry !== undefined) setWidth(Math.floor(entry.contentRect.width));
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);

  useEffect(() => {
    const element = host.current;
    if (element === null || width === 0) return undefined;
    const chart = draw(width);
    element.replaceChildren(chart);
    return () => chart.remove();
  }, [width, data]);

  return <div class="chart" ref={host} role="figure" aria-label={label} />;
}
